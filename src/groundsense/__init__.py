"""groundsense: sentence-level grounding check for RAG answers."""
