"""The user's own Maven settings.xml, read on this machine (sandbox/ecosystems/java/settings.py):
which mirror stands for Central, what set-up is told, and what is only said. No Docker: the
set-up that takes the mirror through the fence is tests/test_java.py's mirror test."""

from __future__ import annotations

from pathlib import Path

from sandbox.ecosystems.java.settings import (
    MIRROR,
    MIRROR_PASSWORD,
    MIRROR_USER,
    mirror_variables,
    read_user_settings,
    settings_path,
)
from sandbox.ecosystems.java.setup_infer import infer_java_setup
from sandbox.setup.cache import SetupSpec, with_host_config
from sandbox.setup.network import plan_network
from tests.java_projects import PROJECT

SECRET = "s3cret-Hunter2-value"
SETTINGS = f"""<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
  <servers>
    <server><id>corp</id><username>builder</username><password>{SECRET}</password></server>
    <server><id>all</id><username>${{env.ALL_USER}}</username>
      <password>${{env.ALL_TOKEN}}</password></server>
  </servers>
  <mirrors>
    <mirror><id>all</id><mirrorOf>*</mirrorOf><url>https://all.example/maven2</url></mirror>
    <mirror><id>corp</id><mirrorOf>central</mirrorOf>
      <url>https://nexus.corp.example:8443/repository/central/</url></mirror>
    <mirror><id>snapshots</id><mirrorOf>corp-snapshots</mirrorOf>
      <url>https://snap.corp.example/</url></mirror>
  </mirrors>
  <profiles><profile><id>extra</id><repositories>
    <repository><id>jitpack</id><url>https://jitpack.io</url></repository>
  </repositories></profile></profiles>
</settings>
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "home" / ".m2" / "settings.xml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_mirror_of_central_is_maven_s_choice_and_the_rest_is_said(tmp_path):
    """An exact `central` wins over an earlier `*`, as Maven's mirror selector has it; the
    other mirrors and a profile's repository are named, not used."""
    path = write(tmp_path, SETTINGS)
    settings = read_user_settings(path, {})
    assert settings.mirror is not None
    assert (settings.mirror.id, settings.mirror.url, settings.mirror.credentials) == (
        "corp",
        "https://nexus.corp.example:8443/repository/central/",
        True,
    )
    notes = "\n".join(settings.notes)
    assert "mirror all (https://all.example/maven2, mirrorOf *): not used" in notes
    assert "mirror snapshots" in notes and "repository jitpack (https://jitpack.io)" in notes
    assert SECRET not in notes and SECRET not in repr(settings)


def test_set_up_is_told_the_mirror_and_its_password_reaches_it_as_a_secret(tmp_path):
    """The file's mirror is, to set-up, MAVEN_MIRROR_URL (its host and port allowed through the
    fence); its server's password a variable named as with --setup-env (masked, never kept,
    its value in no key), its user name passed as it is."""
    home = tmp_path / "home"
    write(tmp_path, SETTINGS)
    repo = tmp_path / "repo"
    for rel, text in PROJECT.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    plan = infer_java_setup(repo, environ={}, home=home)
    assert "from the mirror corp (https://nexus.corp.example:8443/repository/central/, " in (
        plan.describe()
    )
    assert "of " + str(home / ".m2" / "settings.xml") in plan.describe()
    assert any("mirror all" in n for n in plan.notes)
    assert SECRET not in repr(plan) and SECRET not in plan.command

    spec = SetupSpec(command=plan.command or "", installer=plan.installer)
    told, environ = with_host_config(spec, {"PATH": "/bin"})
    assert told.env_names == (MIRROR_PASSWORD,)
    network = plan_network(
        "index", env_names=told.env_names, environ=environ, installer=told.installer
    )
    assert "nexus.corp.example" in network.allowed_hosts and 8443 in network.connect_ports
    assert network.passed[MIRROR] == "https://nexus.corp.example:8443/repository/central/"
    assert (network.passed[MIRROR_USER], network.passed[MIRROR_PASSWORD]) == ("builder", SECRET)
    assert SECRET not in "".join(network.names)


def test_credentials_the_file_takes_from_the_environment_are_read_here(tmp_path):
    """`${env.NAME}` in a server is this machine's variable; one not set is said, and the
    mirror is taken without credentials."""
    path = write(
        tmp_path, SETTINGS.replace("<mirrorOf>central</mirrorOf>", "<mirrorOf>x</mirrorOf>")
    )
    environ = {"ALL_USER": "ci", "ALL_TOKEN": SECRET}
    assert mirror_variables(path, environ) == {
        MIRROR: "https://all.example/maven2",
        MIRROR_USER: "ci",
        MIRROR_PASSWORD: SECRET,
    }
    settings = read_user_settings(path, {"ALL_USER": "ci"})
    assert settings.mirror is not None and not settings.mirror.credentials
    assert any("${env.ALL_TOKEN}: not set here" in n for n in settings.notes)
    assert mirror_variables(path, {"ALL_USER": "ci"}) == {MIRROR: "https://all.example/maven2"}


def test_mirrors_that_do_not_take_central_are_not_used(tmp_path):
    """`*,!central` leaves Central out; `external:*` takes it; an encrypted password (Maven
    decrypts it with settings-security.xml, not here) is said, and not passed."""
    excluded = """<settings><mirrors><mirror><id>m</id><mirrorOf>*,!central</mirrorOf>
      <url>https://m.example/</url></mirror></mirrors></settings>"""
    assert read_user_settings(write(tmp_path, excluded), {}).mirror is None
    external = """<settings><servers><server><id>m</id><username>u</username>
      <password>{COQLCE6DU6GtcS5P=}</password></server></servers><mirrors><mirror><id>m</id>
      <mirrorOf>external:*</mirrorOf><url>https://m.example/</url></mirror></mirrors></settings>"""
    path = write(tmp_path, external)
    settings = read_user_settings(path, {})
    assert settings.mirror is not None and settings.mirror.id == "m"
    assert any("encrypted" in n for n in settings.notes)
    assert mirror_variables(path, {}) == {MIRROR: "https://m.example/"}


def test_maven_mirror_url_wins_and_no_file_changes_nothing(tmp_path):
    path = write(tmp_path, SETTINGS)
    settings = read_user_settings(path, {MIRROR: "https://given.example/m2"})
    assert settings.mirror is None
    assert settings.notes == (f"{MIRROR} is set: the mirrors of {path} are not used",)
    assert mirror_variables(path, {MIRROR: "https://given.example/m2"}) == {}
    nothing = read_user_settings(tmp_path / "none.xml", {})
    assert (nothing.mirror, nothing.notes) == (None, ())
    assert settings_path({"MAVEN_SETTINGS": str(path)}) == path
    assert settings_path({}, tmp_path) == tmp_path / ".m2" / "settings.xml"
    named = read_user_settings(tmp_path / "none.xml", {"MAVEN_SETTINGS": "x"})
    assert named.notes and "not a file" in named.notes[0]


def test_a_repository_s_http_answer_is_said_first_with_where_credentials_come_from():
    """Maven's line for a 401 (3.8.7's, from a set-up through a mirror given a wrong password;
    3.9's wording) spends the one-line error's 240 characters before it names the host: the
    set-up says the URL, the status and the artifact first. Run by sh, as set-up runs it."""
    import subprocess

    from sandbox.ecosystems.java.setup_infer import HTTP_ANSWER

    def said(cause: str) -> str:
        run = ["sh", "-c", HTTP_ANSWER + 'printf %s "$c"']
        return subprocess.run(run, env={"c": cause}, capture_output=True, text=True).stdout

    maven_387 = (
        "Plugin org.apache.maven.plugins:maven-resources-plugin:2.6 or one of its dependencies "
        "could not be resolved: Failed to read artifact descriptor for org.apache.maven.plugins:"
        "maven-resources-plugin:jar:2.6: Could not transfer artifact org.apache.maven.plugins:"
        "maven-resources-plugin:pom:2.6 from/to central (http://172.17.0.4:8000/af4e8af36842/): "
        "authentication failed for http://172.17.0.4:8000/af4e8af36842/org/apache/maven/plugins/"
        "maven-resources-plugin/2.6/maven-resources-plugin-2.6.pom, status: 401 Unauthorized"
    )
    assert said(maven_387) == (
        "http://172.17.0.4:8000/af4e8af36842/ answered 401 Unauthorized for org.apache.maven."
        "plugins:maven-resources-plugin:pom:2.6 (its credentials: the <server> of your "
        "settings.xml's mirror, or MAVEN_MIRROR_USERNAME and --setup-env MAVEN_MIRROR_PASSWORD)"
    )
    maven_39 = (
        "Could not transfer artifact a:b:pom:1 from/to central (https://nexus.corp.example/m2): "
        "status code: 403, reason phrase: Forbidden (403)"
    )
    assert said(maven_39).startswith("https://nexus.corp.example/m2 answered 403 for a:b:pom:1 (")
    missing = "Could not find artifact org.example:nowhere:jar:9.9.9 in central (https://r/m2)"
    assert said(missing) == missing
    gone = maven_39.replace("status code: 403, reason phrase: Forbidden (403)", "status: 502")
    assert said(gone) == "https://nexus.corp.example/m2 answered 502 for a:b:pom:1"
