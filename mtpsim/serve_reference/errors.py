"""Errors in vLLM's shape: `{"error": {message, type, param, code}}` for the server's own
refusals (`ApiError`), FastAPI's body-parsing errors and pydantic validation errors, as vLLM's
handlers (`vllm/entrypoints/serve/exception_handling/`) write them."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException

MAX_REPORTED_ERRORS = 5


class ApiError(Exception):
    """An error answered in vLLM's body shape: {"error": {message, type, param, code}}."""

    def __init__(self, code: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.param = code, message, param

    def body(self) -> dict[str, Any]:
        kind = {400: "BadRequestError", 404: "NotFoundError", 503: "ServiceUnavailableError"}
        return error_body(self.code, self.message, kind.get(self.code, "InternalServerError"),
                          self.param)


class ErrorInfo(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: int


class ErrorResponse(BaseModel):
    """vLLM's `ErrorResponse` (`vllm/entrypoints/serve/engine/protocol.py`)."""

    error: ErrorInfo


def error_body(code: int, message: str, kind: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _clean_loc(loc: Any) -> str:
    """`body.prompt`, not `body.prompt.list[constrained-int]` (as vLLM's `clean_loc_for_param`):
    pydantic names each union branch it tried in the location."""
    parts = [str(p) for p in loc if not re.search(r"[\[\](){}]", str(p))
             and str(p) not in _PYDANTIC_MARKERS]
    return ".".join(parts)


_PYDANTIC_MARKERS = {"str", "int", "float", "bool", "list", "dict", "none", "function-after",
                     "function-before", "function-wrap", "json-or-python", "lax-or-strict"}


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    """vLLM's message for a body that fails its types: the errors without the input echoed."""
    errors = exc.errors()
    if not errors:
        return "Validation error", None
    parts = list(dict.fromkeys(f"{_clean_loc(e.get('loc', ()))}: {e.get('msg', 'invalid')}"[:300]
                               for e in errors))
    more = f"; ...and {len(parts) - MAX_REPORTED_ERRORS} more" if len(
        parts) > MAX_REPORTED_ERRORS else ""
    label = "error" if len(errors) == 1 else "errors"
    param = _clean_loc(errors[0].get("loc", ())) or None
    return (f"{len(errors)} validation {label}: " + "; ".join(parts[:MAX_REPORTED_ERRORS])
            + more, param)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> Response:
        return JSONResponse(exc.body(), status_code=exc.code)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> Response:
        kind = HTTPStatus(exc.status_code).phrase
        return JSONResponse(error_body(exc.status_code, str(exc.detail), kind),
                            status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> Response:
        message, param = _validation_message(exc)
        return JSONResponse(error_body(400, message, "Bad Request", param), status_code=400)
