"""Ingestion partitions: one per source declared in data/sources.yaml (registered by the sensor)."""

import dagster as dg

SOURCES_PARTITION = "sources"

source_partitions = dg.DynamicPartitionsDefinition(name=SOURCES_PARTITION)
