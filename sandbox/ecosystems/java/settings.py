"""The user's own Maven `settings.xml`, read on this machine: the mirror that stands for Maven
Central there, and its server's credentials.

Which file: `$MAVEN_SETTINGS` when set (the path Maven's `-s` would be given), else
`~/.m2/settings.xml`, Maven's own user settings. It is the user's configuration, trusted as
such, but never copied anywhere: what set-up takes from it is three variables, as if the user
had set them (sandbox/ecosystems/java/setup_infer.py): `MAVEN_MIRROR_URL`, its host then let
through the fence, and `MAVEN_MIRROR_USERNAME`/`MAVEN_MIRROR_PASSWORD`, which reach set-up's
Maven through its environment alone (masked, never in a file, an image, a label or a log).
`MAVEN_MIRROR_URL` set in the environment wins: the file's mirrors are then not used.

The mirror is the one Maven itself would pick for the repository `central` (maven-resolver's
DefaultMirrorSelector): the first whose `<mirrorOf>` is `central` exactly, else the first whose
pattern takes it (`*`, `external:*`, a list, `!central` excluding it). Its `<server>` of the same
id gives the credentials: literal, or `${env.NAME}` read from this machine's environment. Every
other mirror, a profile's `<repositories>` and a password Maven would decrypt (`{...}`, with
settings-security.xml) are said in the plan's notes and not used.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sandbox.ecosystems.java.elements import child as _child
from sandbox.ecosystems.java.elements import children as _children
from sandbox.ecosystems.java.elements import tag as _tag
from sandbox.ecosystems.java.elements import text as _text

#: The variable that points at the user's settings file, when not ~/.m2/settings.xml.
SETTINGS_VARIABLE = "MAVEN_SETTINGS"
MIRROR = "MAVEN_MIRROR_URL"
MIRROR_USER = "MAVEN_MIRROR_USERNAME"
MIRROR_PASSWORD = "MAVEN_MIRROR_PASSWORD"
CENTRAL_URL = "https://repo.maven.apache.org/maven2"
MAX_BYTES = 1 << 20
_ENV = re.compile(r"\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}")
_OTHER_REF = re.compile(r"\$\{[^}]*\}")


@dataclass(frozen=True, kw_only=True)
class SettingsMirror:
    """The mirror of Central a settings file names (never its credentials' values)."""

    path: Path  # the settings file it is in
    id: str
    url: str
    mirror_of: str
    credentials: bool  # whether its server gives a username and a password set-up can pass

    def describe(self) -> str:
        """`nexus (https://nexus.example/maven2, mirrorOf *) of ~/.m2/settings.xml`."""
        return f"{self.id} ({_shown(self.url)}, mirrorOf {self.mirror_of}) of {_home(self.path)}"


@dataclass(frozen=True, kw_only=True)
class UserSettings:
    """What set-up takes from the user's settings file, and what it leaves (its notes)."""

    path: Path | None  # the file read; None when there is none
    mirror: SettingsMirror | None
    notes: tuple[str, ...] = ()


def settings_path(environ: Mapping[str, str], home: Path | None = None) -> Path:
    """$MAVEN_SETTINGS, else ~/.m2/settings.xml."""
    if given := environ.get(SETTINGS_VARIABLE):
        return Path(given).expanduser()
    return (Path.home() if home is None else home) / ".m2" / "settings.xml"


def read_user_settings(path: Path, environ: Mapping[str, str]) -> UserSettings:
    """The mirror of Central in `path` and the notes on what else it says (module docstring)."""
    if environ.get(MIRROR):
        said = f"{MIRROR} is set: the mirrors of {_home(path)} are not used"
        return UserSettings(path=None, mirror=None, notes=(said,) if path.is_file() else ())
    root, why = _parse(path)
    if root is None:
        if not why and environ.get(SETTINGS_VARIABLE):
            why = f"{SETTINGS_VARIABLE} names {path}, which is not a file"
        return UserSettings(path=None, mirror=None, notes=(why,) if why else ())
    notes: list[str] = []
    mirrors = [_fields(m) for m in _children(_child(root, "mirrors"), "mirror")]
    chosen = _central_mirror(mirrors)
    mirror = None
    for fields in mirrors:
        name = f"{_home(path)}'s mirror {fields.get('id', '?')}"
        if fields is not chosen:
            notes.append(
                f"{name} ({_shown(fields.get('url', ''))}, mirrorOf "
                f"{fields.get('mirrorOf', '')}): not used, set-up takes the mirror of central only"
            )
            continue
        url, unknown = _interpolate(fields.get("url", ""), environ)
        host = urlsplit(url).hostname if url else None
        if unknown or not host or urlsplit(url).scheme not in ("http", "https"):
            notes.append(
                f"{name}: its url {_shown(url)} is not one set-up can use ({unknown or 'no host'})"
            )
            continue
        if urlsplit(url).username is not None or re.search(r'[<>&"\s]', url):
            notes.append(f"{name}: its url holds credentials or markup: not used (use a <server>)")
            continue
        credentials, told = _credentials(root, fields["id"], environ)
        notes += [f"{name}: {t}" for t in told]
        mirror = SettingsMirror(
            path=path,
            id=fields["id"],
            url=url,
            mirror_of=fields.get("mirrorOf", ""),
            credentials=credentials is not None,
        )
    for profile in _children(_child(root, "profiles"), "profile"):
        for kind, one in (
            ("repositories", "repository"),
            ("pluginRepositories", "pluginRepository"),
        ):
            for repo in _children(_child(profile, kind), one):
                fields = _fields(repo)
                notes.append(
                    f"{_home(path)}'s profile {_text(_child(profile, 'id')) or '?'} names the "
                    f"repository {fields.get('id', '?')} ({_shown(fields.get('url', ''))}): not "
                    "used (set-up asks Central, or the mirror of central)"
                )
    return UserSettings(path=path, mirror=mirror, notes=tuple(notes))


def mirror_variables(path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables set-up gets from the settings file at `path` (the module docstring): {}
    when it names no usable mirror of Central, or MAVEN_MIRROR_URL is set already. Read when
    set-up runs; the values go nowhere but set-up's environment."""
    settings = read_user_settings(path, environ)
    if settings.mirror is None:
        return {}
    root, _ = _parse(path)
    assert root is not None
    found = {MIRROR: settings.mirror.url}
    credentials, _ = _credentials(root, settings.mirror.id, environ)
    if credentials is not None:
        found[MIRROR_USER], found[MIRROR_PASSWORD] = credentials
    return found


@dataclass(frozen=True)
class MirrorVariables:
    """`mirror_variables(path, environ)` when called: an installer's `host_config`, which
    reads the file when set-up runs. Its repr never shows the environment."""

    path: Path
    environ: Mapping[str, str] = field(repr=False, compare=False)

    def __call__(self) -> dict[str, str]:
        return mirror_variables(self.path, self.environ)


def _central_mirror(mirrors: list[dict[str, str]]) -> dict[str, str] | None:
    """The mirror Maven picks for `central`: an exact mirrorOf first, else the first pattern."""
    usable = [m for m in mirrors if m.get("id") and m.get("url")]
    exact = next((m for m in usable if m.get("mirrorOf", "").strip() == "central"), None)
    return exact or next((m for m in usable if _takes_central(m.get("mirrorOf", ""))), None)


def _takes_central(pattern: str) -> bool:
    """Whether a `<mirrorOf>` pattern takes Maven Central (id `central`, external, https).

    >>> [_takes_central(p) for p in ("*", "external:*", "*,!central", "other", "external:http:*")]
    [True, True, False, False, False]
    """
    taken = False
    for part in (p.strip() for p in pattern.split(",")):
        if part == "!central":
            return False
        taken = taken or part in ("*", "external:*", "central")
    return taken


def _credentials(
    root: ET.Element, server_id: str, environ: Mapping[str, str]
) -> tuple[tuple[str, str] | None, list[str]]:
    """The username and password of the <server> of `server_id`, and what to say of them."""
    server = next(
        (
            s
            for s in _children(_child(root, "servers"), "server")
            if _text(_child(s, "id")) == server_id
        ),
        None,
    )
    if server is None:
        return None, []
    fields = _fields(server)
    said = [
        f"its server's {k} is not passed" for k in ("privateKey", "configuration") if k in fields
    ]
    user, unknown_user = _interpolate(fields.get("username", ""), environ)
    password, unknown_password = _interpolate(fields.get("password", ""), environ)
    if unknown_user or unknown_password:
        said.append(
            f"its server's credentials name {unknown_user or unknown_password}: not set here"
        )
        return None, said
    if re.fullmatch(r"\{.*\}", password):
        said.append(
            "its server's password is encrypted (settings-security.xml): not decrypted here; "
            "give it as ${env.NAME} instead"
        )
        return None, said
    if not user or not password:
        return None, said
    return (user, password), said


def _interpolate(value: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """`value` with `${env.NAME}` replaced from `environ`, and what could not be ("" if none)."""
    unknown: list[str] = []

    def sub(match: re.Match[str]) -> str:
        got = environ.get(match.group(1))
        if got is None:
            unknown.append(match.group(0))
            return ""
        return got

    value = _ENV.sub(sub, value.strip())
    if not unknown and (other := _OTHER_REF.search(value)):
        unknown.append(other.group(0))
    return value, ", ".join(unknown)


def _parse(path: Path) -> tuple[ET.Element | None, str]:
    """The settings file's root, or None and why ("" when there is simply none)."""
    try:
        if not path.is_file():
            return None, ""
        data = path.read_bytes()[: MAX_BYTES + 1]
    except OSError as exc:
        return None, f"{_home(path)}: not read ({exc.strerror or exc})"
    if len(data) > MAX_BYTES or b"<!ENTITY" in data:
        return None, f"{_home(path)}: over 1 MB or declares XML entities; not read"
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        return None, f"{_home(path)}: not XML ({exc}); not read"
    if _tag(root) != "settings":
        return None, f"{_home(path)}: not Maven settings (root <{_tag(root)}>); not read"
    return root, ""


def _fields(element: ET.Element) -> dict[str, str]:
    """An element's children by tag: their text, stripped (a child with children: "")."""
    return {_tag(c): (c.text or "").strip() for c in element}


def _shown(url: str) -> str:
    """A URL as said: never its user info (a settings file's url should hold none anyway)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _home(path: Path) -> str:
    """`path` with the home folder as `~`."""
    try:
        return f"~/{path.relative_to(Path.home())}"
    except ValueError:
        return str(path)
