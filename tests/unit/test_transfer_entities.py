"""Which entity of the namespace an imported entity is merged into
(:mod:`memloci.service.transfer.entities`): the one whose names hold the incoming canonical name
(else an alias) by ``name_key``, of a type that fits; never one of several, never by a
merely compatible name."""

from __future__ import annotations

from datetime import UTC, datetime

from memloci.models import Entity, EntityType
from memloci.service.transfer.entities import NameIndex, merged

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 6, 1, tzinfo=UTC)


def _e(
    id: str, name: str, *aliases: str, type: EntityType = EntityType.PERSON, mentions: int = 1,
    seen: datetime = T0, summary: str | None = None,
) -> Entity:  # fmt: skip
    return Entity(
        id=id, namespace="ns", canonical_name=name, type=type, aliases=list(aliases),
        summary=summary, first_seen=seen, last_seen=seen, mention_count=mentions,
    )  # fmt: skip


def _match(existing: list[Entity], incoming: Entity) -> str | None:
    found = NameIndex(existing).match(incoming)
    return None if found is None else found.id


def test_the_canonical_name_matches_case_and_punctuation_aside() -> None:
    ana = _e("ana00001", "Ana Silva")
    assert _match([ana], _e("x", "ana silva.")) == "ana00001"
    assert _match([ana], _e("x", "ANA  SILVA")) == "ana00001"
    assert _match([_e("ana00001", "Ana Silva", "Ana")], _e("x", "ana")) == "ana00001"


def test_an_alias_matches_when_the_canonical_name_matches_nothing() -> None:
    ana = _e("ana00001", "Ana Silva")
    assert _match([ana], _e("x", "Ana Maria Silva", "Ana Silva")) == "ana00001"
    costa = _e("costa001", "Ana Costa", "Ana")
    # the canonical name wins over an alias that names another entity
    assert _match([ana, costa], _e("x", "Ana Silva", "Ana")) == "ana00001"


def test_no_match_by_a_compatible_name_or_a_conflicting_type() -> None:
    assert _match([_e("ana00001", "Ana Silva")], _e("x", "Ana S.")) is None
    assert _match([_e("ana00001", "Ana Silva")], _e("x", "Ana")) is None
    place = _e("merc0001", "Mercury", type=EntityType.PLACE)
    assert _match([place], _e("x", "Mercury", type=EntityType.TOOL)) is None
    assert _match([place], _e("x", "Mercury", type=EntityType.CONCEPT)) == "merc0001"


def test_a_name_several_entities_hold_matches_none() -> None:
    both = [_e("ana00001", "Ana"), _e("ana00002", "ana")]
    assert _match(both, _e("x", "Ana")) is None
    by_alias = [_e("costa001", "Ana Costa", "Ana"), _e("silva001", "Ana Silva", "Ana")]
    assert _match(by_alias, _e("x", "Ana")) is None
    assert _match(by_alias, _e("x", "Ana Lima", "Ana")) is None
    # of a conflicting type, the second one does not count
    mixed = [_e("ana00001", "Ana"), _e("ana00002", "Ana", type=EntityType.PROJECT)]
    assert _match(mixed, _e("x", "Ana")) == "ana00001"


def test_merged_keeps_id_summary_and_gains_names_and_mentions() -> None:
    ours = _e("ana00001", "Ana Silva", "Ana", type=EntityType.CONCEPT, mentions=2,
              summary="ours")  # fmt: skip
    theirs = _e("x", "ana silva", "A. Silva", "Ana", mentions=3, seen=T1, summary="theirs")
    out = merged(ours, theirs, mentions=True)
    assert (out.id, out.canonical_name, out.summary) == ("ana00001", "Ana Silva", "ours")
    assert (out.aliases, out.mention_count, out.type) == (["Ana", "A. Silva"], 5,
                                                          EntityType.PERSON)  # fmt: skip
    assert (out.first_seen, out.last_seen) == (T0, T1)
    assert merged(ours, theirs, mentions=False).mention_count == 2


def test_the_rest_import_result_has_every_count_of_the_report() -> None:
    from dataclasses import fields

    from memloci.interfaces.rest.schemas import ImportResult
    from memloci.service.transfer import ImportReport

    counts = {f.name for f in fields(ImportReport)} - {"errors", "names_to_embed"}
    assert counts <= set(ImportResult.model_fields)
