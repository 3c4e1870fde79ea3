# Feedback Lab: the app on port 5006, on CPU. Build: docker build -t feedback-lab .
# Run:   docker run --rm -p 5006:5006 feedback-lab
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /srv/feedback-lab

# The CPU build of torch: the image has no GPU, and the default wheel would pull CUDA (several GB).
RUN pip install "torch>=2.2" --index-url https://download.pytorch.org/whl/cpu

COPY pyproject.toml README.md ./
COPY app ./app
COPY widgets ./widgets
COPY engines ./engines
COPY assets ./assets
RUN pip install -e .

RUN useradd --create-home learner
USER learner
EXPOSE 5006
# Liveness: /healthz answers 200 "ok" while the server's event loop runs (python, since the slim image has no curl).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:5006/healthz', timeout=4).read() != b'ok')"
CMD ["feedback-lab", "serve", "--address", "0.0.0.0", "--port", "5006", "--allow-websocket-origin", "*"]
