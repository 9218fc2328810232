"""groundsense inside the frameworks RAG teams already use (docs/integrations.md).

One module per framework, each installed by its own extra and imported only by its users:

- ``groundsense.integrations.guardrails``: a Guardrails AI validator (``groundsense[guardrails]``);
- ``groundsense.integrations.llamaindex``: a LlamaIndex evaluator (``groundsense[llamaindex]``);
- ``groundsense.integrations.langchain``: a LangChain Runnable (``groundsense[langchain]``);
- ``groundsense.integrations.haystack``: a Haystack pipeline component (``groundsense[haystack]``);
- ``groundsense.integrations.ragas``: a RAGAS metric (``groundsense[ragas]``);
- ``groundsense.integrations.dspy``: a DSPy metric and reward (``groundsense[dspy]``);
- ``groundsense.integrations.pydantic_ai``: a Pydantic AI output validator that makes an agent
  retry until its answer is grounded (``groundsense[pydantic-ai]``);
- ``groundsense.integrations.mcp``: an MCP server with the ``check_grounding`` tool, run by
  ``groundsense mcp`` (``groundsense[mcp]``).

All of them make the same ``detect`` call (on any ``groundsense.detection.Detection``) and read the same verdict from it
(:mod:`groundsense.integrations.common`). The core package never imports this one.
"""
