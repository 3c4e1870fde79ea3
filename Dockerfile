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
CMD ["feedback-lab", "serve", "--address", "0.0.0.0", "--port", "5006", "--allow-websocket-origin", "*"]
