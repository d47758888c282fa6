"""Framework integrations (layer: interfaces): memloci inside other agent frameworks.

Each module is thin over the SDK and needs its optional extra; nothing here is
imported until you import the module itself:

- :mod:`memloci.integrations.langchain` (``pip install 'memloci[langchain]'``): the
  memory tools as LangChain ``StructuredTool`` objects, and :class:`MemlociStore`, a
  LangGraph ``BaseStore`` backed by memloci facts.
- :mod:`memloci.integrations.pydantic_ai` (``pip install 'memloci[pydantic-ai]'``):
  the memory tools as pydantic-ai ``Tool`` objects or a ``FunctionToolset``.
- :mod:`memloci.integrations.openai_agents` (``pip install 'memloci[openai-agents]'``):
  :class:`MemlociSession`, an OpenAI Agents SDK ``Session`` over memloci threads, and
  the memory tools as ``FunctionTool`` objects.
- :mod:`memloci.integrations.llamaindex` (``pip install 'memloci[llamaindex]'``):
  :class:`MemlociMemoryBlock`, a long-term memory block for LlamaIndex's ``Memory``,
  and the memory tools as LlamaIndex ``FunctionTool`` objects.

Every tool is generated from :data:`memloci.tools.TOOLS` and runs through
:meth:`memloci.tools.Tools.call`, so validation, results and ``Error: …`` texts are
the same as in every other agent loop, and a tool never raises into the framework.
"""
