"""The secret patterns :func:`memoryclaw.vault.redact.redact` looks for, and the literals that
tell which of them a text may hold.

Three kinds of rule, in this order (the formats follow what gitleaks and detect-secrets know):

* token formats a service gives its keys (``sk_live_…``, ``glpat-…``, ``hf_…``, ``SG.…``, a
  private key block, a JWT, a Slack webhook URL, credentials in a URL, HTTP Basic auth, …),
  and card numbers (Luhn-checked) and US social security numbers;
* a value assigned to a key that names a secret (``DB_PASSWORD=…``, ``"pass": "…"``,
  ``aws_secret_access_key = …``, ``password is: …``); a password's value runs to the end of
  the line, since passwords hold spaces;
* credentials on a command line, where only the value goes and the rest of the command
  stays: ``--password X`` / ``--pass=X`` / ``--token X``, ``curl -u user:pass``,
  ``sshpass -p X``, ``mysql -pX``, ``docker login -p X``, ``redis-cli -a X``,
  ``openssl enc -k X``, ``htpasswd -b FILE USER X``, a value piped (``echo X |``) or fed
  (``<<< X``) to a ``--password-stdin`` command; a value after a shell line continuation
  (``DB_PASSWORD=\\`` and the value on the next line) is the value all the same;
* a passphrase, secret phrase, recovery or seed words said in prose (``the passphrase for
  the vault is …``: to the end of the line) and a PIN or passcode of digits;
* a long random token (high entropy, letters and digits) shortly after a word such as key,
  token, secret or password;
* a key as a masking tool shows it (``sk-pro…hr1w``): the tail of a real key is a secret
  fragment, never a word to tag or name.
"""

from __future__ import annotations

import re
from typing import Any, cast


class _LazyPattern:
    """A regular expression compiled the first time it is used.

    :func:`~memoryclaw.vault.redact.redact` runs a rule only when the text holds one of its
    markers, and a turn mostly holds none: compiling every rule at import cost each fresh
    ``memoryclaw log`` ~5 ms.  Every attribute is the compiled pattern's.
    """

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return getattr(self._compiled, name)


def _lazy(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(source, flags)``, compiled on first use (see :class:`_LazyPattern`)."""
    return cast("re.Pattern[str]", _LazyPattern(source, flags))


_TOKENS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test|prod)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9]{20,}"),
    ("api-key", r"\b(?:sk|rk|pk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}"),
    ("aws-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    (
        "gitlab-token",
        r"\bgl(?:pat|ptt|dt|rt|soat|ft|imt|agent|cbt|oas|feat)-[0-9A-Za-z_-]{20,}",
    ),
    ("slack-token", r"\bxox(?:[abposre]|e\.xox[bp])-[A-Za-z0-9-]{10,}"),
    (
        "webhook-url",
        r"\bhttps?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/)[A-Za-z0-9_/+-]{20,}",
    ),
    ("google-key", r"\bAIza[0-9A-Za-z_-]{30,}|\bya29\.[0-9A-Za-z_-]{20,}"),
    ("huggingface-token", r"\b(?:hf|api_org)_[A-Za-z0-9]{30,}"),
    ("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("telegram-token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,}"),
    (
        # Prefixes that name their service: npm, PyPI, Docker Hub, DigitalOcean, Shopify,
        # Square, HashiCorp Vault, Linear, Postman, New Relic, Grafana, Notion, Databricks,
        # RubyGems, Doppler, Sentry, Slack app-level tokens, age and Terraform Cloud.
        "api-token",
        r"\b(?:npm_|pypi-AgE|dckr_pat_|do[opr]_v1_|shp(?:at|ca|pa|ss)_|sq0(?:atp|csp)-|hv[sbr]\."
        r"|lin_api_|PMAK-|NRAK-|glc_|glsa_|ntn_|dapi|rubygems_|dp\.pt\.|sntry[su]_|xapp-"
        r"|AGE-SECRET-KEY-1)[A-Za-z0-9_=-]{20,}"
        r"|\b[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{40,}",
    ),
    ("twilio-key", r"\bSK[0-9a-fA-F]{32}\b"),
    ("mailgun-key", r"\bkey-[0-9a-zA-Z]{32}\b|\b[0-9a-f]{32}-us\d{1,2}\b"),
    (
        "azure-key",
        r"(?i)\b(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/=]{20,}"
        r"|\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",
    ),
    (
        # A PuTTY key file: the header through its MAC, or a pasted private body alone.
        "putty-key",
        r"PuTTY-User-Key-File-\d+:.*?(?:Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]*|\Z)"
        # (its line breaks may be written \n, inside a JSON string)
        r"|Private-Lines:[ \t]*\d+[ \t]*(?:\r?\n|(?:\\r)?\\n)"
        r"(?:[ \t]*[A-Za-z0-9+/=]{8,}[ \t]*(?:\r?\n|(?:\\r)?\\n|(?![A-Za-z0-9+/=])))+"
        r"(?:Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]*)?",
    ),
    (
        # A key shown masked, prefix and tail around an ellipsis: the tail is part of the key.
        "masked-key",
        r"(?<![A-Za-z0-9_])(?:(?:sk|rk|pk|gh[pousr]|github_pat|glpat|xox[abposre]|xapp|hf|npm"
        r"|dckr_pat|whsec|glc|glsa|ntn|lin_api|pypi|dop_v1|shpat|sntrys|rubygems|SG|ya29|hvs)"
        r"[-_.]|AKIA|ASIA|AIza|dapi|PMAK-|NRAK-)[A-Za-z0-9_-]{0,24}(?:\u2026|\.{3}|\\u2026)"
        r"[A-Za-z0-9_-]{2,16}(?![A-Za-z0-9])"
        # any other prefix: a word and a tail of letters and digits mixed around an ellipsis
        r"|(?<![\w.-])[A-Za-z0-9_-]{2,12}(?:\u2026|\.{3}|\\u2026)"
        r"(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{3,8}(?![\w-])",
    ),
    ("bearer", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    ("url-credentials", r"(?<=://)[^/\s:@]*:[^/\s@]+(?=@)"),
    ("ssn", r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b"),
)
PATTERNS = tuple((kind, _lazy(pattern, re.DOTALL)) for kind, pattern in _TOKENS)
BASIC_RE = _lazy(r"(?i)\bbasic\s+(?P<value>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")
CARD_RE = _lazy(r"(?<![\d.,-])\d(?:[ -]?\d){12,18}(?![\d])")

# A secret's name: one of these words as a part of an identifier (`smtp_password`,
# `AWS_SECRET_ACCESS_KEY`, `x-api-key`), never a longer word (`tokens`, `passenger`), nor
# the end of a `[REDACTED:api-key]` marker (so redacting twice changes nothing).
_PASSWORD_WORDS = r"password|passwd|passphrase|pass"
_KEY_WORDS = (
    r"pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key"
    r"|client[_-]?secret|auth[_-]?token|access[_-]?token|credentials?"
)
_PART = r"[A-Za-z0-9]{1,40}"
# What a secret is for, between its name and "is": "the password for the vault is X".
# ("the secret to success is …", "the key of the song is …" stay prose: only "for" and "on")
_FOR = r"(?:\s+(?:for|on)(?:\s+[\w.@/-]{1,40}){1,4}?)?"
# A PIN's or passphrase's purpose may also take "to": "the PIN to my bank card is …" (never
# for "secret": "the secret to success is …" stays prose).
_FOR_TO = r"(?:\s+(?:for|on|to)(?:\s+[\w.@/-]{1,40}){1,4}?)?"
# A shell line continuation: a backslash ending the line, the command going on below.
_CONT = r"\\\r?\n"


# An environment variable may run its name into the word: PGPASSWORD, SSHPASS, VAULTTOKEN.
_FUSED = r"(?-i:[A-Z][A-Z0-9]{0,11}(?:PASSWORD|PASSWD|PASSPHRASE|PASS|PWD|SECRET|TOKEN))"


def _key(words: str) -> str:
    before, after = rf"(?:{_PART}[_.-]){{0,6}}", rf"(?:[_.-]{_PART}){{0,6}}"
    return rf"(?<![A-Za-z0-9]){before}(?:{words}|{_FUSED}){after}(?![A-Za-z0-9\]])"


def _assignment(words: str, bare: str) -> re.Pattern[str]:
    """``key: value``, ``key = "value"``, ``"key": "value"``, ``key is: value``, also with the
    quotes escaped (``\\"key\\": \\"value\\"``, JSON inside a JSON string).  A bare value
    that is itself followed by ``:`` or ``=`` is the next key, not a value."""
    return _lazy(
        rf"(?i)(?P<key>{_key(words)}\\?[\"']?{_FOR}(?:\s+is)?\s*[:=](?:\s|{_CONT})*)"
        r"(?:(?P<q>\\?\")(?P<dq>[^\"\n\\]+)(?P=q)|'(?P<sq>[^'\n]+)'"
        rf"|(?P<bare>{bare})(?![^\s\"',;]|\s*[:=]))"
    )


# A password may hold spaces: everything to the end of the line is the secret.
PASSWORD_ASSIGNMENT_RE = _assignment(_PASSWORD_WORDS, r"[^\s\"',;][^\n]*")
KEY_ASSIGNMENT_RE = _assignment(_KEY_WORDS, r"[^\s\"',;]{4,}")
# `my password is X` is prose: the word after "is" is a secret unless it is an ordinary word.
IS_RE = _lazy(
    rf"(?i)(?P<key>\b(?:{_PASSWORD_WORDS}|{_KEY_WORDS}){_FOR}\s+is\s+)"
    r"(?P<bare>[^\s\"',;]{4,}?)(?=[.!?]*(?:[\s\"',;)]|$))"
)
# A password typed right after its name, with no ":" or "is" ("wifi password hunter2hunter2"):
# only a word of six or more with a digit in it, so "password manager" and "password reset" stay.
PASSWORD_WORD_RE = _lazy(
    r"(?i)(?P<key>\b(?:password|passwd|pwd)\s+)"
    r"(?P<bare>(?=[^\s\"',;]*\d)[^\s\"',;]{6,64}?)"
    r"(?=[.!?]*(?:[\s\"',;)]|$))"
)
# A phrase said in prose is words: "the passphrase for the vault is correct horse battery
# staple" is secret to the end of the line, unless it goes on as prose ("… is in the safe").
PHRASE_IS_RE = _lazy(
    r"(?i)(?P<key>\b(?:pass[ -]?phrase|secret[ -]phrase|(?:recovery|seed|backup|mnemonic)"
    r"[ -](?:phrase|words|codes?|sentence)|mnemonic)s?"
    # ("seed phrase: …" is said without "is"; a bare "mnemonic:" is a heading, not a value)
    rf"(?:{_FOR_TO}\s+(?:is|are|was|were)\b\s*:?|(?<!mnemonic)(?<!mnemonics)\s*:)[ \t]*)"
    r"(?P<bare>[^\s,;][^\n]*)"
)
PHRASE_PROSE = frozenset(
    """a an the in on at under inside behind with by from into not no now here also still
    written stored kept saved printed somewhere safe my your our his her their its being
    is to of does do be means easy hard simple""".split()
)
# A PIN or passcode is digits: "the pin is 4821", "PIN: 4821" ("pin: latest" stays).
PIN_RE = _lazy(
    rf"(?i)(?P<key>\b(?:pin(?:[ _-]?(?:code|number))?|passcode){_FOR_TO}"
    r"(?:\s+(?:is|was)\s*:?|\\?[\"']?\s*[:=])[ \t]*\\?[\"']?)"
    # digits, maybe spelled one by one: "4 8 2 1", "4-8-2-1"
    r"(?P<bare>\d{4,12}|\d(?: \d){3,11}|\d(?:-\d){3,11})(?![\w-]|[.,]\d)"
)
# A long random token shortly after a word that announces a secret: `my key ab12…`.
ENTROPY_RE = _lazy(
    rf"(?i)(?<![A-Za-z0-9])(?:{_PASSWORD_WORDS}|pwd|key|token|secret|credentials?)s?"
    r"(?![A-Za-z0-9\]])[^\n]{0,30}?(?<![A-Za-z0-9+/_.=-])(?P<value>[A-Za-z0-9+/_.=-]{20,})"
)
MIN_ENTROPY = 3.5  # bits per character; random base64 of 20+ characters has over 4

# One shell word: quoted (spaces and all) or bare.  A command-line secret is only its value:
# the options and arguments after it stay.
# (a double quote may be escaped, \", inside a JSON string)
# Every stretch a rule scans is bounded, so no text makes redaction slower than linear.
_WORD = (
    r"(?:'(?P<sq>[^'\n]{0,500})'"
    r'|(?P<dqo>\\?)"(?P<dq>(?:[^"\\\n]|\\[^"\n]){0,500})(?P=dqo)"'
    r"""|(?P<bare>[^\s'"]+))"""
)
# later on the same command (not past a pipe or a `;`; a line continuation goes on)
_UNTIL = rf"(?:[^\n|;&]|{_CONT}){{0,300}}?(?<!\S)"
_SP = rf"(?:[ \t]|{_CONT})"  # a blank between two words of one command
# The rest of a command that reads a password from stdin: docker login --password-stdin.
# (gh auth login --with-token reads a token the same way)
_STDIN_USER = (
    r"[^\n|;&]{0,200}?(?:--?[A-Za-z-]{0,20}(?:password|passwd|pass|token|secret)-stdin\b"
    r"|--with-token\b)"
)
_OPTION_WORDS = (
    r"password|passwd|passphrase|pass|passin|passout|pwd|token|secret|api-?key|access-?key"
    r"|secret-?key"
    r"|private-?key|auth-?token|access-?token|client-?secret"
)
COMMAND_RES = tuple(
    _lazy(pattern)
    for pattern in (
        # --password X, --pass=X, --api-key X; never --password-stdin or --token-file
        rf"(?i)(?<![\w-])--?(?:[a-z0-9]+-)*(?:{_OPTION_WORDS})(?![\w-])(?:={_SP}*|{_SP}+)(?!-)"
        rf"{_WORD}",
        # curl -u user:pass, --user user:pass, --proxy-user user:pass: the user stays
        rf"(?P<user>)\bcurl\b{_UNTIL}-[A-Za-z]*[uU][ \t]*{_WORD}",
        rf"(?P<user>)(?<![\w-])--(?:proxy-)?user(?:=|[ \t]+){_WORD}",
        rf"\bsshpass\b{_UNTIL}-p[ \t]*{_WORD}",
        rf"\b(?:mysql\w*|mariadb[\w-]*)\b{_UNTIL}-p(?=[^\s-]){_WORD}",
        rf"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|az)\b[^\n|;&]{{0,80}}?"
        r"\blogin\b"
        rf"{_UNTIL}-p(?:=|[ \t]+){_WORD}",
        rf"\bredis-cli\b{_UNTIL}-a{_SP}+{_WORD}",
        # a key's new or old passphrase; SQL Server's, zip's and 7-Zip's passwords
        rf"\bssh-keygen\b{_UNTIL}-[NP][ \t]+{_WORD}",
        rf"\b(?:sqlcmd|bcp|zip|unzip)\b{_UNTIL}-P[ \t]+{_WORD}",
        rf"\b7za?\b{_UNTIL}-p(?=[^\s-]){_WORD}",
        # openssl's -k password and -K key (never -kfile: a file's name)
        rf"\bopenssl\b{_UNTIL}-[kK]{_SP}+(?!-){_WORD}",
        # a value piped or fed to a command that reads its password from stdin; a shell
        # variable ($PW, "${PW}") is no value
        r"\b(?:echo|printf)(?:[ \t]+-[neE]{1,3})*(?:[ \t]+(?P<fmt>['\"]?)%s(?:\\n)?(?P=fmt))?"
        rf"[ \t]+(?![\"]?\$){_WORD}[ \t]*\|(?={_STDIN_USER})",
        rf"(?i)--?[a-z-]{{0,20}}(?:password|passwd|pass|token|secret)-stdin\b{_UNTIL}"
        rf"<<<{_SP}*(?![\"]?\$){_WORD}",
    )
)
# htpasswd -b takes the password as an argument: the last of FILE USER PASSWORD (-n: no FILE).
_ARGUMENT = r"""(?:'[^'\n]{0,500}'|"(?:[^"\\\n]|\\.){0,500}"|[^\s'"|;&]{1,500})"""
HTPASSWD_RE = _lazy(
    rf"\bhtpasswd(?P<rest>(?:{_SP}+-[A-Za-z]{{1,12}}(?:{_SP}+\d{{1,4}})?){{1,8}}"
    rf"(?:{_SP}+{_ARGUMENT}){{1,3}})"
)
SHELL_WORD_RE = _lazy(r"'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"|[^\s'\"]+")
ITEM_RE = _lazy(r"\s*(?:[-*+>]|\d{1,3}[.)])\s+")  # a list item's or quote's marker
# Words an option is followed by in prose ("set --token in the file"): not a value.
NOT_VALUES = frozenset(
    """a an and argument as at flag for from in into is it of on option or parameter switch
    the then to too was with""".split()
)
# The turn before ends by asking for, or announcing, a secret: "my password is", "token?".
ASKED_RE = _lazy(
    rf"(?i)(?<![A-Za-z0-9])(?:{_PASSWORD_WORDS}|passcode|pwd|pin|secret|token|key|credentials?)"
    rf"s?(?![A-Za-z0-9]){_FOR}(?:[\s:=,.!?\u2026()-]|\b(?:is|was|it|its|here|below|follows"
    r"|next|now|then|this|one)\b){0,8}\Z"
)
# The turn before announces a phrase ("my seed phrase is", "the passphrase for the vault is"):
# the answer may be several words.
PHRASE_ASKED_RE = _lazy(
    r"(?i)\b(?:pass[ -]?phrase|secret[ -]phrase|(?:recovery|seed|backup|mnemonic)"
    rf"[ -](?:phrase|words|sentence))s?{_FOR_TO}"
    r"(?:[\s:,.!?\u2026()-]|\b(?:is|are|was|were|it|here|below|follows|next|now|then)\b){0,8}\Z"
)
PHRASE_WORD_RE = _lazy(r"[A-Za-z0-9!@#$%^&*._+-]{1,40}")

# What a match of each rule holds: one of these literals (looked for in the case-folded text,
# so they find more, never less) or, for rules with none, one of the SHAPES.  Rules whose
# literals are absent are not run; text with none of them all is returned as it is.  Plain
# substring tests keep the common case, text without a secret, fast.
_KEY_MARKERS = ("pass", "pwd", "secret", "token", "key", "credential")
MARKERS: dict[str, tuple[str, ...]] = {
    "private-key": ("-----begin",),
    "jwt": ("eyj",),
    "stripe-key": ("k_live", "k_test", "k_prod", "whsec_"),
    "api-key": ("sk-", "rk-", "pk-"),
    "aws-key": ("akia", "asia", "abia", "acca", "a3t"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": tuple(
        f"gl{p}-" for p in "pat ptt dt rt soat ft imt agent cbt oas feat".split()
    ),
    "slack-token": ("xox",),
    "webhook-url": ("hooks.slack", "/api/webhooks/"),
    "google-key": ("aiza", "ya29."),
    "huggingface-token": ("hf_", "api_org_"),
    "sendgrid-key": ("sg.",),
    "telegram-token": (":aa",),
    "api-token": tuple(
        """
        npm_ pypi-age dckr_pat_ _v1_ shp sq0 hvs. hvb. hvr. lin_api_ pmak- nrak- glc_ glsa_
        ntn_ dapi rubygems_ dp.pt. sntry xapp- age-secret-key-1 atlasv1
        """.split()
    ),
    "twilio-key": (),
    "mailgun-key": ("key-", "-us"),
    "azure-key": ("accountkey", "sharedaccesskey", "q~"),
    "putty-key": ("putty-user-key-file", "private-lines"),
    "masked-key": ("\u2026", "...", "\\u2026"),  # the last as JSON writes it
    "bearer": ("bearer",),
    "url-credentials": ("://",),
    "ssn": (),
    "basic-auth": ("basic",),
    "command-line": (
        *("--", "-pass", "curl", "sshpass", "mysql", "mariadb", "login", "redis-cli"),
        *("ssh-keygen", "sqlcmd", "bcp", "zip", "7z", "openssl", "stdin", "htpasswd"),
    ),
    "card-number": (),
    "password": ("pass",),
    "key-value": _KEY_MARKERS,
    "phrase": ("phrase", "words", "code", "sentence", "mnemonic"),
    "pin": ("pin", "passcode"),
}
ALL_MARKERS = frozenset(m for markers in MARKERS.values() for m in markers)
SHAPES = _lazy(r"\d{3}-\d\d-\d{4}|\d{4}[ -]?\d{4}[ -]?\d{4}|SK[0-9a-fA-F]{32}")
PROSE_WORDS = frozenset(
    """
    also back been being broken changed correct different empty enough expired fine gone good
    hidden incorrect invalid just long lost missing needed never newer older only optional ready
    really required reset revoked right same saved secure shared short still stored strong sure
    easy hard simple written printed taped
    that there this too unknown used valid very visible weak what where which wrong safe kept
    """.split()
)
# A key of a structured value (tool-call arguments) whose value is never copied.
SECRET_KEY_RE = _lazy(
    r"(?i)pass|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth|credential"
    r"|cookie|ssn|cvv|card[_-]?number|\bpin\b"
)
