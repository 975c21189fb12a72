"""Secret values, and their mask in what the worker writes or sends: `***`, as CI systems mask
the secrets registered with them (GitHub Actions writes `***`).

The secrets of a run are the values of the set-up-only variables (`--setup-env NAME`) and the
model endpoint's API key, registered once when the run starts (`run_secrets`), each with its
common encodings (`forms`): URL-quoted as `quote` and `quote_plus` quote it, and base64, standard
and URL-safe. The value inside a longer base64 string (`user:value`, encoded whole) has no fixed
form: it is not recognised. A value shorter than `MIN_CHARS` is no secret worth the name and
would mask ordinary words: it is left alone (say so where `--setup-env` is documented).

    >>> s = Secrets.of({"TOKEN": "s3cr3t-value"})
    >>> s.mask("index-url = https://u:s3cr3t-value@host/simple")
    'index-url = https://u:***@host/simple'
    >>> s.mask("czNjcjN0LXZhbHVl")  # base64
    '***'
    >>> Secrets.of({"SHORT": "abc"}).mask("abc")
    'abc'
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus

MASK = "***"
MIN_CHARS = 6
#: Where the model endpoint's key is read (by the openai SDK and worker/llm/client.py).
API_KEY_VARIABLE = "OPENAI_API_KEY"

T = TypeVar("T")


def forms(value: str) -> tuple[str, ...]:
    """`value` and its common encodings, each once, longest first.

    >>> forms("a b/c=d!")[:3]
    ('a%20b%2Fc%3Dd%21', 'a%20b/c%3Dd%21', 'a+b%2Fc%3Dd%21')
    >>> forms("a b/c=d!")[3:]
    ('YSBiL2M9ZCE=', 'YSBiL2M9ZCE', 'a b/c=d!')
    """
    raw = value.encode()
    encoded = (
        value,
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
    )
    unpadded = tuple(e.rstrip("=") for e in encoded[-2:])
    return tuple(sorted(dict.fromkeys((*encoded, *unpadded)), key=len, reverse=True))


@dataclass(frozen=True, kw_only=True)
class Secrets:
    """Named secret values, each with its encoded forms; `mask` hides every form of each."""

    named: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, forms of its value)

    @classmethod
    def of(cls, values: Mapping[str, str]) -> Secrets:
        """The secrets `values` names (name -> value); values under MIN_CHARS are left out."""
        kept = ((name, forms(v)) for name, v in values.items() if len(v) >= MIN_CHARS)
        return cls(named=tuple(kept))

    def __bool__(self) -> bool:
        return bool(self.named)

    def joined(self, other: Secrets) -> Secrets:
        """These secrets and `other`'s."""
        return Secrets(named=self.named + other.named)

    @property
    def forms(self) -> tuple[str, ...]:
        """Every form of every value, each once, longest first (a longer one masked whole)."""
        every = dict.fromkeys(f for _, fs in self.named for f in fs)
        return tuple(sorted(every, key=len, reverse=True))

    def mask(self, text: str) -> str:
        """`text` with every form of every value replaced by MASK."""
        for form in self.forms:
            if form in text:
                text = text.replace(form, MASK)
        return text

    def mask_data(self, data: T) -> T:
        """`data` (JSON-like: dicts, lists, tuples, strings) with every string masked."""
        if not self.named:
            return data
        return self._masked(data)  # type: ignore[no-any-return]

    def _masked(self, data: Any) -> Any:
        if isinstance(data, str):
            return self.mask(data)
        if isinstance(data, dict):
            return {self._masked(k): self._masked(v) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return type(data)(self._masked(v) for v in data)
        return data

    def stream(self) -> StreamMask:
        """A mask for output that comes in chunks (a value may be split between two)."""
        return StreamMask(tuple(f.encode() for f in self.forms))


NO_SECRETS = Secrets()


class StreamMask:
    """Masks a byte stream chunk by chunk: the last `longest - 1` bytes are held back until
    the next chunk (or `flush`), so a value split between two chunks is masked all the same.

    >>> m = Secrets.of({"T": "s3cr3t-value"}).stream()
    >>> m.feed(b"token s3cr3") + m.feed(b"t-value here") + m.flush()
    b'token *** here'
    """

    def __init__(self, forms: Sequence[bytes]) -> None:
        self._forms = tuple(forms)
        self._keep = max((len(f) for f in self._forms), default=1) - 1
        self._pending = b""

    def feed(self, data: bytes) -> bytes:
        """What can be written now of `data`, masked; the rest waits for the next chunk."""
        if not self._forms:
            return data
        buf = self._pending + data
        for form in self._forms:
            if form in buf:
                buf = buf.replace(form, MASK.encode())
        cut = max(0, len(buf) - self._keep)
        self._pending = buf[cut:]
        return buf[:cut]

    def flush(self) -> bytes:
        """What is held back, at the end of the stream (masked already)."""
        held, self._pending = self._pending, b""
        return held


def run_secrets(
    setup_env: Sequence[str], environ: Mapping[str, str], *, api_key: bool = True
) -> Secrets:
    """The secrets of one run: each set-up-only variable's value (those set in `environ`) and,
    with `api_key`, the model endpoint's key."""
    names = [*setup_env, *([API_KEY_VARIABLE] if api_key else [])]
    return Secrets.of({n: environ[n] for n in dict.fromkeys(names) if environ.get(n)})
