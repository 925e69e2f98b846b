# MemLens server on the shipped checkpoints.
#   CPU (default):  docker build -t memlens . && docker run -p 8000:8000 memlens
#   CUDA:           docker build --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 -t memlens:cuda .
#                   docker run --gpus all -p 8000:8000 memlens:cuda
# PyTorch's CUDA wheels carry their CUDA runtime, so the same slim base serves
# both; BASE can name another Python 3.11+ image.
ARG BASE=python:3.11-slim
FROM ${BASE}
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
WORKDIR /srv/memlens
RUN pip install --no-cache-dir torch==2.13.0 --index-url ${TORCH_INDEX}
COPY pyproject.toml README.md ./
COPY app app
COPY memlens_cli memlens_cli
COPY inference inference
COPY training training
COPY templates templates
COPY static static
COPY checkpoints checkpoints
# Editable, so the app finds templates/, static/ and checkpoints/ beside its code.
RUN pip install --no-cache-dir -e .
ENV MEMLENS_DEVICE=auto
EXPOSE 8000
CMD ["memlens", "serve", "--host", "0.0.0.0", "--port", "8000"]
