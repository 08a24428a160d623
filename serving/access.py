"""Bearer tokens: each team's token reaches only that team's memories; reader tokens read graphs.

The tokens file (JSON or YAML) is ``{"teams": {"lab": "tok-lab"}, "readers": ["tok-read"]}``.
It is read in the ingress replica, never shipped in the application's arguments
(those are stored by Serve), and re-read when it changes, so a token can be
rotated without a redeploy. "Changes" compares inode, ctime, mtime and size: a
rewrite to the same length with the old mtime put back still changes the ctime.
Rotate by writing a new file and renaming it over the old one (atomic: a reader
never sees half a file, and the inode changes). Tokens are compared with
``hmac.compare_digest`` against every known token, so the time taken says nothing
about how much of a guess was right.

No tokens file means no access: every protected endpoint answers 401 and says why.
"""

from __future__ import annotations

import hmac
import json
import threading
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from serving.names import NAME


class Unauthorized(PermissionError):
    """No token, or one nobody was given: 401."""


class Forbidden(PermissionError):
    """A known token asking for what it does not reach: 403."""


class TokensFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    teams: dict[str, str] = Field(default_factory=dict)
    readers: list[str] = Field(default_factory=list)

    @field_validator("teams")
    @classmethod
    def _team_names(cls, teams: dict[str, str]) -> dict[str, str]:
        bad = [t for t in teams if not NAME.fullmatch(t)]
        if bad:
            raise ValueError(f"team names {bad} are not allowed (letters, digits, '-', '_')")
        return teams

    @model_validator(mode="after")
    def _distinct(self) -> "TokensFile":
        tokens = [*self.teams.values(), *self.readers]
        if any(len(t) < 8 for t in tokens):
            raise ValueError("every token needs at least 8 characters")
        if len(set(tokens)) != len(tokens):
            raise ValueError("a token may belong to one team or reader only")
        return self


def read_tokens(path: str | Path) -> TokensFile:
    text = Path(path).read_text()
    data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    return TokensFile.model_validate(data or {})


def _matches(token: str, known: str) -> bool:
    return hmac.compare_digest(token.encode(), known.encode())


class Access:
    """Answers "who is this token?" from the tokens file, reloading it when it changes."""

    def __init__(self, path: str | None):
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, ...] | None = None
        self._tokens = TokensFile()

    def _current(self) -> TokensFile:
        if not self.path:
            raise Unauthorized("no tokens are configured (serving.tokens_file or MEMGRAFT_TOKENS): access is closed")
        try:
            st = Path(self.path).stat()
        except OSError as err:
            raise Unauthorized(f"the tokens file cannot be read ({type(err).__name__}): access is closed") from err
        stamp = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size)
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._tokens, self._stamp = read_tokens(self.path), stamp
                except (ValueError, yaml.YAMLError) as err:  # a broken file closes access, it never opens it
                    self._tokens, self._stamp = TokensFile(), None
                    raise Unauthorized(f"the tokens file is invalid ({type(err).__name__}): access is closed") from err
            return self._tokens

    def team_of(self, token: str) -> str | None:
        found = None
        for team, known in self._current().teams.items():
            if _matches(token, known):  # no early exit: every token costs the same
                found = team
        return found

    def is_reader(self, token: str) -> bool:
        return any([_matches(token, known) for known in self._current().readers])

    def require_team(self, token: str | None, team: str) -> None:
        """Pass only ``team``'s own token."""
        token = self._present(token)
        owner = self.team_of(token)
        if owner == team:
            return
        if owner is None and not self.is_reader(token):
            raise Unauthorized("unknown token")
        raise Forbidden(f"this token does not reach team {team!r}")

    def require_reader(self, token: str | None) -> None:
        """Pass only reader tokens (graphs and their traces)."""
        token = self._present(token)
        if self.is_reader(token):
            return
        if self.team_of(token) is None:
            raise Unauthorized("unknown token")
        raise Forbidden("graphs are read with a reader token; a team token reaches only its team's memories")

    def require_any(self, token: str | None) -> None:
        """Pass any known token (the chat endpoint: a model, no memories)."""
        token = self._present(token)
        if self.team_of(token) is None and not self.is_reader(token):
            raise Unauthorized("unknown token")

    @staticmethod
    def _present(token: str | None) -> str:
        if not token:
            raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")
        return token
