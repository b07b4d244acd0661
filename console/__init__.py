"""The web console: brokers, reassignments, topics, messages, consumer groups and lag history of a
Kafka cluster, in the browser.

``minikafka console --bootstrap-server host:9092`` serves it on http://127.0.0.1:8080. It talks
to the cluster only through the bundled client (`client/`), so it works against any Kafka.

Modules: `cli` and `settings` (flags, ``console.*`` keys), `server` (runs the app), `app`
(routes, errors, the live-region event stream), `web` (rendering, input parsing, pagination),
`gateway` (the admin client and a cached cluster snapshot), `placement` (per-broker load, leader
imbalance and reassignment progress computed from that snapshot), `reader` (bounded reads for the
messages page), `formats` (text/JSON/hex), `lag_store` (SQLite history) and `sampler` (fills it),
`pages/` (one module per area: overview, brokers and reassignments, topics, messages, groups).
Templates in ``templates/``, CSS and JS in ``static/``; Plotly comes from the ``plotly`` Python
package (`pages.vendor`).
"""
