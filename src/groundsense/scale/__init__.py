"""Scoring at scale on a Ray cluster (``pip install 'groundsense[ray]'``); see docs/scale.md.

    import ray, groundsense.scale as gs
    records = gs.detect_dataset(ray.data.read_parquet("s3://bucket/answers/"), gs.Resources(actors=8, gpus_per_actor=1))
    records.write_parquet("s3://bucket/groundsense/")
"""

from .io import open_sink
from .pipeline import Resources, ScoreRows, detect_dataset, run_ray_batch
from .schema import RECORD_SCHEMA, records_table, table_records

__all__ = ["open_sink", "Resources", "ScoreRows", "detect_dataset", "run_ray_batch", "RECORD_SCHEMA", "records_table",
           "table_records"]
