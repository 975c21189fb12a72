# The default sandbox image: Python 3, pytest and git, a non-root user, WORKDIR /workspace, and
# tinyproxy (the set-up phase's filtering proxy runs from this image; see setup_network.py).
# Like a CI runner's image for Python, it also holds a C toolchain with the Python headers and the
# -dev libraries common extensions link against (a project builds where it builds in CI), and the
# programs test suites shell out to (a pager, patch, diff, file, ps, gettext, locales, tzdata).
# BASE is a build argument: a registry image (python:3.12-slim) or a local one. `worker sandbox
# build` makes `worker-base:bookworm` offline with debootstrap when no registry is reachable; that
# base already holds python3, venv, pytest, git and tinyproxy, so nothing below needs the network
# then (a base made before tinyproxy joined the list gets it from apt here, once).
ARG BASE=python:3.11-slim
FROM ${BASE}
ARG UID=1000
USER root
RUN set -e; \
    need=""; \
    command -v git >/dev/null 2>&1 || need="$need git"; \
    python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need="$need python3-venv"; \
    command -v tinyproxy >/dev/null 2>&1 || need="$need tinyproxy-bin"; \
    python3 -c "import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()['include'] + '/Python.h'))" \
        || need="$need python3-dev"; \
    for tool in gcc:gcc g++:g++ make:make pkg-config:pkg-config less:less patch:patch diff:diffutils \
                file:file ps:procps msgfmt:gettext locale-gen:locales unzip:unzip zip:zip xz:xz-utils \
                bzip2:bzip2; do \
        command -v "${tool%%:*}" >/dev/null 2>&1 || need="$need ${tool#*:}"; \
    done; \
    for lib in libffi-dev libssl-dev zlib1g-dev libyaml-dev libxml2-dev libxslt1-dev libjpeg-dev \
               libsqlite3-dev libbz2-dev liblzma-dev tzdata ca-certificates; do \
        dpkg -s "$lib" >/dev/null 2>&1 || need="$need $lib"; \
    done; \
    if [ -n "$need" ]; then \
        apt-get update && apt-get install -y --no-install-recommends $need \
        && rm -rf /var/lib/apt/lists/*; \
    fi; \
    if [ -f /etc/locale.gen ] && ! locale -a 2>/dev/null | grep -qi '^en_US.utf-\?8$'; then \
        sed -i 's/^# *en_US.UTF-8/en_US.UTF-8/' /etc/locale.gen && locale-gen >/dev/null; \
    fi; \
    python3 -m venv --system-site-packages /opt/venv; \
    /opt/venv/bin/python -c "import pytest" 2>/dev/null || /opt/venv/bin/pip install --no-cache-dir pytest; \
    grep -q "^worker:" /etc/passwd || echo "worker:x:${UID}:${UID}:sandbox:/home/worker:/bin/sh" >> /etc/passwd; \
    grep -q "^worker:" /etc/group || echo "worker:x:${UID}:" >> /etc/group; \
    mkdir -p /home/worker /workspace; \
    chown -R ${UID}:${UID} /opt/venv /home/worker /workspace
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    LANG=C.UTF-8 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/home/worker
USER ${UID}:${UID}
WORKDIR /workspace
CMD ["sleep", "infinity"]
