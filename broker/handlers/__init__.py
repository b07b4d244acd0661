"""One module per Kafka API; importing this package registers them all."""

from broker.handlers import (  # noqa: F401
    api_versions,
    create_topics,
    delete_topics,
    fetch,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)
