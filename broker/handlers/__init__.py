"""One module per Kafka API; importing this package registers them all."""

from broker.handlers import (  # noqa: F401
    alter_configs,
    api_versions,
    create_topics,
    delete_topics,
    describe_configs,
    fetch,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)
