"""Evaluation data and analysis layer: benchmark loaders, splits, metrics, bootstrap.

Pure Python (numpy/pandas/scikit-learn/LightGBM); no language model is needed.
"""
