"""``occ.client.profile``: where it lives, mode 0600, the environment over the file, the key
never in a repr or an error."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from occ.client import profile

KEY = "occ_key_00000000-0000-4000-8000-000000000000_" + "a" * 64


def test_saved_with_mode_0600_under_xdg_config_home_and_loaded_back(tmp_path: Path) -> None:
    environ = {"XDG_CONFIG_HOME": str(tmp_path)}
    where = profile.save(environ, profile.Profile("http://127.0.0.1:8000", KEY))
    assert where == tmp_path / "occ" / "profile.json"
    assert stat.S_IMODE(where.stat().st_mode) == 0o600
    loaded = profile.load(environ)
    assert (loaded.url, loaded.key) == ("http://127.0.0.1:8000", KEY)
    assert KEY not in repr(loaded)


def test_the_environment_overrides_the_file(tmp_path: Path) -> None:
    environ = {"XDG_CONFIG_HOME": str(tmp_path)}
    profile.save(environ, profile.Profile("http://127.0.0.1:8000", KEY))
    other = KEY[:-1] + "b"
    loaded = profile.load({**environ, "OCC_URL": "https://occ.example/", "OCC_API_KEY": other})
    assert (loaded.url, loaded.key) == ("https://occ.example", other)


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("ftp://host", KEY),
        ("http://user:pw@host", KEY),
        ("http://host", "not-a-key"),
    ],
)
def test_a_bad_url_or_key_is_refused_without_echoing_it(url: str, key: str) -> None:
    with pytest.raises(profile.ProfileError) as refused:
        profile.load({"XDG_CONFIG_HOME": "/nonexistent", "OCC_URL": url, "OCC_API_KEY": key})
    assert "pw" not in str(refused.value) and "not-a-key" not in str(refused.value)


def test_without_a_profile_it_says_how_to_log_in(tmp_path: Path) -> None:
    with pytest.raises(profile.ProfileError, match="occ login"):
        profile.load({"XDG_CONFIG_HOME": str(tmp_path)})


def test_the_default_namespace_is_set_kept_across_login_and_overridden(tmp_path: Path) -> None:
    environ = {"XDG_CONFIG_HOME": str(tmp_path)}
    where = profile.set_field(environ, "namespace", "team-a")
    assert stat.S_IMODE(where.stat().st_mode) == 0o600
    profile.save(environ, profile.Profile("http://127.0.0.1:8000", KEY))
    assert profile.load(environ).namespace == "team-a"
    assert profile.load({**environ, "OCC_NAMESPACE": "team-b"}).namespace == "team-b"
    profile.save(environ, profile.Profile("http://127.0.0.1:8000", KEY))  # the same API again
    assert profile.load(environ).namespace == "team-a"
    profile.save(environ, profile.Profile("https://other.example", KEY))  # another API
    assert profile.load(environ).namespace is None
    profile.set_field(environ, "namespace", "team-c")
    profile.set_field(environ, "namespace", None)
    assert profile.load(environ).namespace is None
    with pytest.raises(profile.ProfileError, match="not a profile setting"):
        profile.set_field(environ, "key", "occ_x_y")


def test_a_profile_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    (tmp_path / "occ").write_text("a file where the directory should be")
    environ = {"XDG_CONFIG_HOME": str(tmp_path)}
    expected = f"cannot write the profile {tmp_path / 'occ' / 'profile.json'}: "
    with pytest.raises(profile.ProfileFileError, match=expected) as refused:
        profile.write(environ, {"url": "http://127.0.0.1:8000"})
    assert refused.value.code == "PROFILE_UNUSABLE"


@pytest.mark.parametrize("content", ["{not json", "[]", None])
def test_an_unreadable_profile_is_left_aside_when_the_environment_gives_all(
    tmp_path: Path, content: str | None
) -> None:
    where = tmp_path / "occ" / "profile.json"
    where.parent.mkdir()
    if content is None:
        where.mkdir()  # read_text: IsADirectoryError
    else:
        where.write_text(content)
    environ = {"XDG_CONFIG_HOME": str(tmp_path)}
    with pytest.raises(profile.ProfileFileError, match=f"cannot read the profile {where}"):
        profile.load(environ)
    with pytest.raises(profile.ProfileFileError):  # the URL alone does not do
        profile.load({**environ, "OCC_URL": "http://127.0.0.1:8000"})
    loaded = profile.load({**environ, "OCC_URL": "http://127.0.0.1:8000", "OCC_API_KEY": KEY})
    assert (loaded.url, loaded.key, loaded.namespace) == ("http://127.0.0.1:8000", KEY, None)
