# minikafka broker image: slim Python, non-root user, data on a volume, ApiVersions healthcheck.
FROM python:3.11-slim
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
