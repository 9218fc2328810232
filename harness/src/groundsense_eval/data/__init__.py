"""The benchmarks: loaders of RAGTruth, TofuEval and RAGBench into one case type, where their data is
found, and how cases are sampled and split into development and test partitions."""
