"""Request rows to records: the row runner every entry point shares (``runner``) and the
batch loop over a file of rows (``batch``)."""
