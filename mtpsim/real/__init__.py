"""Real-mode backends: the reference engine in-process or behind its server, vLLM, SGLang.

`backend(engine, server)` is the one factory; `Capabilities` says what each can run. Nothing
here imports an engine until a run asks for it.
"""

from mtpsim.real.backend import BACKENDS, ENGINES, Backend, Capabilities, ServedBackend, backend

__all__ = ["BACKENDS", "ENGINES", "Backend", "Capabilities", "ServedBackend", "backend"]
