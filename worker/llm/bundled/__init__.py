"""The bundled local model: its weights (`worker.llm.bundled.weights`) and its server
(`worker.llm.bundled.server`), under one name for the CLI and `worker fix`."""

from worker.llm.bundled.server import (
    ENGINE_REQUIREMENT,
    SERVED_AT_ENV,
    EngineMissing,
    LocalServer,
    engine_command,
    engine_installed,
    ensure_engine,
    missing_cpu_flags,
    serve,
)
from worker.llm.bundled.weights import (
    BUNDLED_WEIGHTS,
    MODEL_NAME,
    LocalModelError,
    WeightsSpec,
    assemble_weights,
    default_cache_dir,
    pull,
    pulled_model,
)

__all__ = [
    "BUNDLED_WEIGHTS",
    "ENGINE_REQUIREMENT",
    "MODEL_NAME",
    "SERVED_AT_ENV",
    "EngineMissing",
    "LocalModelError",
    "LocalServer",
    "WeightsSpec",
    "assemble_weights",
    "default_cache_dir",
    "engine_command",
    "engine_installed",
    "ensure_engine",
    "missing_cpu_flags",
    "pull",
    "pulled_model",
    "serve",
]
