"""Measurements over cached feature tables: the compared scoring methods, AUCs, thresholds, source-level
bootstrap intervals, and the numbers behind each section of the report. Nothing here renders text."""
