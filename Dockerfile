# Feedback Lab: the app on port 5006 with the embedded model, on CPU.
# Build: docker build -t feedback-lab .
# Run:   docker run --rm -p 5006:5006 -v feedback-lab-runs:/srv/feedback-lab/runs feedback-lab
#        add -e FEEDBACK_LAB_WEBSOCKET_ORIGIN=HOST:PORT, the address learners type, to serve other machines
# CUDA:  docker build --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu124 -t feedback-lab:cuda .
#        docker run --rm --gpus all -p 5006:5006 feedback-lab:cuda   (needs the NVIDIA container toolkit)

# Stage 1: the wheel, built from the sources; it carries what the app reads at run time (the assets package).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY widgets ./widgets
COPY engines ./engines
COPY assets ./assets
RUN pip wheel --no-deps --wheel-dir /wheels .

# Stage 2: the server, with torch and the wheel installed; no source folder, so what runs is what pip installed.
FROM python:3.11-slim

# Where pip finds torch: the CPU build by default, since the default wheel pulls CUDA (several GB);
# a CUDA index (cu121, cu124, ...) gives a GPU build, whose wheels bring their own CUDA libraries.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /srv/feedback-lab

RUN pip install "torch>=2.2" --index-url "${TORCH_INDEX}"

COPY --from=build /wheels /tmp/wheels
RUN pip install /tmp/wheels/feedback_lab-*.whl

# The run folders (and saved pairs and reward models) go to a folder the server's user may write.
ENV FEEDBACK_LAB_RUNS=/srv/feedback-lab/runs
RUN useradd --create-home learner && mkdir -p /srv/feedback-lab/runs && chown learner /srv/feedback-lab/runs
USER learner
VOLUME /srv/feedback-lab/runs
EXPOSE 5006
# Liveness: /healthz answers 200 "ok" while the server's event loop runs (python, since the slim image has no curl).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:5006/healthz', timeout=4).read() != b'ok')"
# Only pages opened at localhost:5006 may open the app's websocket unless FEEDBACK_LAB_WEBSOCKET_ORIGIN names
# the address learners type (comma-separated HOST:PORT): never "*", which would let any web page a learner
# visits open sessions on the class server.
ENV FEEDBACK_LAB_WEBSOCKET_ORIGIN=localhost:5006
CMD ["feedback-lab", "serve", "--address", "0.0.0.0", "--port", "5006"]
