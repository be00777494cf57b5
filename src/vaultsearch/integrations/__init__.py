"""Adapters that put a vault inside other frameworks, each behind its own extra:
``vaultsearch.integrations.llama_index`` (``vaultsearch[llama-index]``) and
``vaultsearch.integrations.langchain`` (``vaultsearch[langchain]``)."""
