# One image for the aggregator and the simulated clients.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY client ./client
COPY aggregator ./aggregator
COPY simulation ./simulation
RUN pip install --no-cache-dir ".[demo,postgres]"
RUN useradd --create-home ldp
USER ldp
EXPOSE 8000
CMD ["ldpcollect", "serve", "--host", "0.0.0.0", "--port", "8000"]
