"""Small-store "first query" probes for ``retrieval_bench.py``: a few memories, one
question, the memory that answers it. The first six come from issue reports (the README
example, three memories of u1, Sam's dog) and early paraphrase checks; the rest were
written the way a new user would try memloci, before they were run, and are kept
whatever they score (two of them are not answered first: the dense model ranks a
distractor a hair closer and no word is shared)."""

from __future__ import annotations

FirstProbe = tuple[str, list[tuple[str, str, str | None]], str, str]
# (name, memories as (kind, text, speaker or subject), query, the memory that answers)
FIRST: list[FirstProbe] = [
    (
        "README SDK example",
        [("add", "I moved to Lisbon", "user"), ("add", "My dog Biscuit hates rain", "user"),
         ("add", "Poor Biscuit!", "assistant")],
        "where does the user live?", "I moved to Lisbon",
    ),
    (
        "three memories of u1",
        [("add", "I moved to Lisbon last spring", None),
         ("add", "My sister Ana works as a nurse", None),
         ("remember", "User prefers Friday due dates", None)],
        "which city does the user live in now?", "I moved to Lisbon last spring",
    ),
    (
        "Sam's dog (fact among Sam's turns)",
        [("add", "Sam went hiking with friends on Saturday", "Sam"),
         ("add", "Sam is learning to cook Thai food", "Sam"),
         ("add", "Sam thinks the new office is too loud", "Sam"),
         ("add", "Sam visited his parents last month", "Sam"),
         ("remember", "Sam's dog is a beagle called Max", "Sam")],
        "What is the name of Sam's dog?", "Sam's dog is a beagle called Max",
    ),
    (
        "paraphrase: job",
        [("add", "I just started working as a nurse at the city hospital", "user"),
         ("add", "I love hiking in the mountains on weekends", "user"),
         ("add", "My favourite food is spicy ramen", "user")],
        "what does the user do for a living?",
        "I just started working as a nurse at the city hospital",
    ),
    (
        "paraphrase: allergy",
        [("remember", "User is allergic to peanuts", None),
         ("remember", "User drives a blue Honda Civic", None),
         ("remember", "User's daughter is called Mia", None)],
        "can I bring a snack with nuts for the user?", "User is allergic to peanuts",
    ),
    (
        "paraphrase: pet",
        [("add", "We adopted a kitten named Luna yesterday", "user"),
         ("add", "The meeting moved to Thursday afternoon", "user"),
         ("add", "I finished reading Dune last night", "user")],
        "does the user have any animals?", "We adopted a kitten named Luna yesterday",
    ),
    # added 2026-11-26: written as a new user would, before they were run; two miss
    (
        "diet",
        [("add", "I'm vegetarian, so no meat for me please", "user"),
         ("add", "Can you recommend a restaurant in Porto?", "user"),
         ("add", "Sure, try Cantinho do Avillez.", "assistant"),
         ("add", "My partner loves seafood though", "user")],
        "what should I keep in mind when suggesting food for the user?",
        "I'm vegetarian, so no meat for me please",
    ),
    (
        "manager (facts)",
        [("remember", "User works at Acme Corp as a data engineer", None),
         ("remember", "User's manager is called Priya", None),
         ("remember", "User prefers Python over Java", None),
         ("remember", "User lives in Berlin", None)],
        "who is the user's boss?", "User's manager is called Priya",
    ),
    (
        "child's age",
        [("add", "My daughter Emma just turned six", "user"),
         ("add", "Work has been stressful lately", "user"),
         ("add", "We're planning a trip to Japan in April", "user"),
         ("add", "Emma loves drawing horses", "user")],
        "how old is the user's child?", "My daughter Emma just turned six",
    ),
    (
        "vacation",
        [("add", "My daughter Emma just turned six", "user"),
         ("add", "Work has been stressful lately", "user"),
         ("add", "We're planning a trip to Japan in April", "user"),
         ("add", "Emma loves drawing horses", "user")],
        "where is the user going on vacation?", "We're planning a trip to Japan in April",
    ),
    (
        "vehicle (facts)",
        [("remember", "User drives a red Tesla Model 3", None),
         ("remember", "User commutes by bike when it's sunny", None),
         ("remember", "User is allergic to cats", None)],
        "what vehicle does the user own?", "User drives a red Tesla Model 3",
    ),
    (
        "pet's name",
        [("add", "Our cat Mochi keeps knocking things off the table", "user"),
         ("add", "I started a pottery class", "user"),
         ("add", "My neighbour's dog barks all night", "user")],
        "what's the name of the user's pet?",
        "Our cat Mochi keeps knocking things off the table",
    ),
    (
        "two people: job",
        [("add", "I finally finished my thesis on coral reefs!", "Maya"),
         ("add", "Congrats! What's next?", "Leo"),
         ("add", "I'm starting a job at the aquarium in June", "Maya"),
         ("add", "I just adopted a parrot called Kiwi", "Leo")],
        "Where will Maya work?", "I'm starting a job at the aquarium in June",
    ),
    (
        "two people: bird",
        [("add", "I finally finished my thesis on coral reefs!", "Maya"),
         ("add", "Congrats! What's next?", "Leo"),
         ("add", "I'm starting a job at the aquarium in June", "Maya"),
         ("add", "I just adopted a parrot called Kiwi", "Leo")],
        "What bird does Leo have?", "I just adopted a parrot called Kiwi",
    ),
    (
        "groceries (facts)",
        [("remember", "User's monthly budget for groceries is 400 euros", None),
         ("remember", "User shops at Lidl", None),
         ("remember", "User is saving for a house", None),
         ("remember", "User's rent is 1200 euros", None)],
        "how much does the user spend on food each month?",
        "User's monthly budget for groceries is 400 euros",
    ),
    (
        "caffeine",
        [("add", "I usually go to bed around midnight", "user"),
         ("add", "Coffee after 3pm keeps me awake", "user"),
         ("add", "I'm training for a half marathon", "user")],
        "why does the user avoid late caffeine?", "Coffee after 3pm keeps me awake",
    ),
    (
        "typos (added with respelling)",
        [("add", "I'm allergic to peanuts", "user"),
         ("add", "I started a pottery class", "user"),
         ("add", "I love spicy ramen", "user"),
         ("add", "My neighbour's dog barks all night", "user")],
        "is the user alergic to penuts?", "I'm allergic to peanuts",
    ),
]  # fmt: skip
