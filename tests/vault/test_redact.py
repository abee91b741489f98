"""Secret redaction before turns reach the vault (SPEC sections 2 and 8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memoryclaw.vault.redact import redact
from tests.share.test_forget import mc

from ..secret_corpus import SAMPLES, SPLIT_SAMPLES

OPENAI_PROJECT = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv"
OPENAI_CLASSIC = "sk-" + "a1B2c3D4" * 6
ANTHROPIC = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1"
AWS = "AKIAIOSFODNN7EXAMPLE"
AWS_TEMP = "ASIAY34FZKBOKMUTVV7A"
GITHUB = "ghp_" + "A1b2C3d4E5" * 3 + "xyZ9"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIzaSyA-1234567890abcdefghijklmnopqrstu"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"my key is {OPENAI_PROJECT} ok", OPENAI_PROJECT, "api-key"),
        (f"OPENAI_API_KEY {OPENAI_CLASSIC}", OPENAI_CLASSIC, "api-key"),
        (f"export ANTHROPIC={ANTHROPIC}", ANTHROPIC, "api-key"),
        (f"aws {AWS} here", AWS, "aws-key"),
        (f"temporary {AWS_TEMP}, expires soon", AWS_TEMP, "aws-key"),
        (f"gh {GITHUB} ok", GITHUB, "github-token"),
        (f"{GITHUB_PAT} done", GITHUB_PAT, "github-token"),
        (f"slack {SLACK} end", SLACK, "slack-token"),
        (f"maps {GOOGLE} end", GOOGLE, "google-key"),
        ("Authorization: Bearer abcdef0123456789abcdef", "abcdef0123456789abcdef", "bearer"),
        (
            "curl -H 'authorization: bearer AbC.dEf-GhI_jKl~mNoPq'",
            "AbC.dEf-GhI_jKl~mNoPq",
            "bearer",
        ),
        (f"session {JWT} end", JWT, "jwt"),
        (
            "db postgres://admin:s3cr3tPass@db.example.com:5432/app",
            "s3cr3tPass",
            "url-credentials",
        ),
        ("clone https://bob:hunter2@git.example.com/r.git", "bob:hunter2", "url-credentials"),
        (f"key:\n{PEM}\nafter", PEM_BODY, "private-key"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\ntruncated here",
            "b3BlbnNzaC1rZXktdjEAAAAA",
            "private-key",
        ),
        ("password: hunter22", "hunter22", "secret"),
        ("PASSWORD=hunter22;", "hunter22", "secret"),
        ("password = 'hunter22' ok", "hunter22", "secret"),
        ("my password is hunter22", "hunter22", "secret"),
        ("the wifi pwd is Pa55w0rd!", "Pa55w0rd!", "secret"),
        ('api_key = "abcd1234xyz"', "abcd1234xyz", "secret"),
        ("API-KEY: zzzz9999", "zzzz9999", "secret"),
        ("apikey is q1w2e3r4", "q1w2e3r4", "secret"),
        ('{"access_token": "ya29.a0AfH6SMBx"}', "ya29.a0AfH6SMBx", "secret"),
        ("client_secret=s3cr3t-val", "s3cr3t-val", "secret"),
        ("auth-token: 9f8e7d6c5b4a", "9f8e7d6c5b4a", "secret"),
        ("token: 9f8e7d6c", "9f8e7d6c", "secret"),
        ("secret is opensesame", "opensesame", "secret"),
        ("Wifi: password hunter2hunter2", "hunter2hunter2", "secret"),
        ("enter the password 48213377 at the gate", "48213377", "secret"),
    ],
    ids=[
        "openai-project",
        "openai-classic",
        "anthropic",
        "aws-akia",
        "aws-asia",
        "github-ghp",
        "github-pat",
        "slack-xoxb",
        "google-aiza",
        "bearer",
        "bearer-lowercase-punct",
        "jwt",
        "url-credentials-postgres",
        "url-credentials-https",
        "pem-block",
        "pem-truncated",
        "password-colon",
        "password-equals-upper",
        "password-quoted",
        "password-is",
        "pwd-is",
        "api-key-equals-quoted",
        "api-key-dash-colon",
        "apikey-is",
        "json-access-token",
        "client-secret",
        "auth-token",
        "token-colon",
        "secret-is",
        "password-then-word-with-a-digit",
        "password-then-digits",
    ],
)
def test_secret_is_redacted(text: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize(("text", "secret"), [s[1:] for s in SAMPLES], ids=[s[0] for s in SAMPLES])
def test_corpus_sample_is_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    assert redact(out) == out


def test_json_inside_a_json_string_is_redacted_and_stays_json() -> None:
    inner = json.dumps({"user": "bob", "pass": "Fake#Pass 0042", "note": "api_key = 'k3y0042x'"})
    out = redact(json.dumps({"body": inner}))
    assert "Fake#Pass" not in out and "k3y0042x" not in out
    assert json.loads(json.loads(out)["body"])["pass"] == "[REDACTED:secret]"


def test_surrounding_text_is_kept() -> None:
    text = f"before {AWS} middle\n{PEM}\nafter token: hunter22 end\npassword: a b c\nnext"
    out = redact(text)
    assert out == (
        "before [REDACTED:aws-key] middle\n[REDACTED:private-key]\n"
        "after token: [REDACTED:secret] end\npassword: [REDACTED:secret]\nnext"
    )


def test_every_occurrence_is_redacted() -> None:
    text = f"{GITHUB} and {GITHUB} and token={GITHUB[:10]}x"
    out = redact(text)
    assert GITHUB not in out and GITHUB[4:14] not in out
    assert out.count("[REDACTED:") == 3


@pytest.mark.parametrize(
    "text",
    [
        "the password policy is strict",
        "email john@example.com about the roadmap",
        "see https://example.com/docs?page=2&sort=asc",
        "fixed in 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "request 550e8400-e29b-41d4-a716-446655440000 failed",
        "password reset link sent",
        "tokens: 500 per minute",
        "max_tokens=800",
        "we use scikit-learn (sk-learn) for this",
        "ssh-rsa AAAAB3NzaC1yc2E user@host",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0B\n-----END PUBLIC KEY-----",
        "my password is",
        "",
        "a basic idea",
        "passenger: Bob",
        "the key points of the meeting",
        "phone 555-123-4567",
        "order 1234567890123",
        "released 2025-04-08T12:00:00Z",
        "the token count was 12345678901234567890",
        "the key to the house is internationalization",
        "I keep it in a password manager",
        "the password 2024 rotation",
        "my boarding pass AB12345 is on my phone",
    ],
    ids=[
        "password-policy",
        "email",
        "normal-url",
        "git-sha",
        "uuid",
        "password-reset",
        "token-count",
        "max-tokens",
        "sk-learn",
        "ssh-public-key",
        "pem-public-key",
        "password-nothing-after",
        "empty",
        "basic-word",
        "passenger",
        "key-points",
        "phone-number",
        "order-number-not-luhn",
        "timestamp",
        "digits-after-token",
        "long-word-after-key",
        "password-manager",
        "password-then-a-year",
        "boarding-pass",
    ],
)
def test_harmless_text_is_unchanged(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    ["the token is expired", "the password is wrong", "that secret is safe with me"],
    ids=["token-expired", "password-wrong", "secret-safe"],
)
def test_prose_with_is_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_quoted_password_with_spaces_is_fully_redacted() -> None:
    out = redact('password: "correct horse battery" ok')
    assert "horse" not in out and "battery" not in out
    assert out.endswith(" ok")


def test_redacted_text_is_stable() -> None:
    once = redact(f"a {AWS} b https://u:p4ss@h.example/x {JWT} c password: hunter22")
    assert redact(once) == once
    assert "[REDACTED:secret]" in once and "[REDACTED:jwt]" in once


_PW = "Fake" + "Pw" + "42"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"tool --password={_PW} --host db --port 5432",
            "tool --password=[REDACTED:secret] --host db --port 5432",
        ),
        (f"backup --pass {_PW} --verbose", "backup --pass [REDACTED:secret] --verbose"),
        (
            f"curl -u admin:{_PW} https://x.example",
            "curl -u admin:[REDACTED:secret] https://x.example",
        ),
        (f"curl -su 'admin:{_PW} x' https://x", "curl -su 'admin:[REDACTED:secret]' https://x"),
        (f"sshpass -p '{_PW}' ssh host", "sshpass -p '[REDACTED:secret]' ssh host"),
        (f"mysql -u app -p{_PW} appdb", "mysql -u app -p[REDACTED:secret] appdb"),
        (
            f"docker login -u bob -p {_PW} registry.example.com",
            "docker login -u bob -p [REDACTED:secret] registry.example.com",
        ),
        (f"redis-cli -a {_PW} ping", "redis-cli -a [REDACTED:secret] ping"),
        (f"export SSHPASS={_PW}", "export SSHPASS=[REDACTED:secret]"),
        (f"PGPASSWORD={_PW} psql -h db", "PGPASSWORD=[REDACTED:secret]"),
    ],
    ids=[
        "password-equals-keeps-the-rest",
        "pass-option",
        "curl-user",
        "curl-user-quoted",
        "sshpass",
        "mysql-fused",
        "docker-login",
        "redis-cli",
        "sshpass-env",
        "pgpassword-env",
    ],
)
def test_command_line_credential_loses_only_its_value(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "docker run -p 8080:80 -u 1000:1000 img",
        "ssh -p 22 host",
        "mkdir -p /tmp/x",
        "mysql -p appdb",
        "echo $PW | docker login --password-stdin",
        "git push -u origin main",
        "the --password flag is required",
        "curl -u bob https://x.example",
        "tool --token-file ~/.token",
        "wait... okay",
        "sk-learn... is a typo",
        "v1.2...v1.3 and 2019...2020",
        "Loading...done",
    ],
    ids=[
        "docker-ports",
        "ssh-port",
        "mkdir-parents",
        "mysql-prompt",
        "password-stdin",
        "git-upstream",
        "option-named-in-prose",
        "curl-user-alone",
        "token-file",
        "ellipsis-in-prose",
        "ellipsis-after-word",
        "ellipsis-in-ranges",
        "ellipsis-between-words",
    ],
)
def test_command_lines_without_a_credential_are_unchanged(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("seed phrase: abandon ability able about", "seed phrase: [REDACTED:secret]"),
        ("Seed words: abandon ability able about", "Seed words: [REDACTED:secret]"),
        (
            'the passphrase is "correct horse battery staple" (quoted)',
            'the passphrase is "[REDACTED:secret]" (quoted)',
        ),
        ("the PIN to my bank card is 0042", "the PIN to my bank card is [REDACTED:secret]"),
        ("my pin code is 4 8 2 1", "my pin code is [REDACTED:secret]"),
        ("the pin is 4-8-2-1", "the pin is [REDACTED:secret]"),
        ("The passcode for the door is 1 9 8 4", "The passcode for the door is [REDACTED:secret]"),
    ],
    ids=[
        "seed-phrase-colon",
        "seed-words-colon",
        "passphrase-quoted",
        "pin-to-the-card",
        "pin-digits-spaced",
        "pin-digits-dashed",
        "passcode-for-digits-spaced",
    ],
)
def test_seed_words_quoted_passphrase_and_spelled_pin_are_redacted(
    text: str, expected: str
) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


def test_putty_key_file_body_is_redacted() -> None:
    [(_, text, secret)] = [s for s in SAMPLES if s[0] == "putty-key"]
    out = redact(text)
    assert secret not in out and "Private-MAC" not in out
    assert out == "my key file:\n[REDACTED:putty-key]\nend"


@pytest.mark.parametrize("mask", ["\u2026", "..."], ids=["ellipsis", "three-dots"])
def test_masked_key_and_its_tail_are_redacted(mask: str) -> None:
    out = redact(f"OPENAI key sk-pro{mask}hr1w is configured")
    assert out == "OPENAI key [REDACTED:masked-key] is configured"
    out = redact(f"the bot key AbCd{mask}hr1w works")  # a prefix no service is known by
    assert out == "the bot key [REDACTED:masked-key] works"


@pytest.mark.parametrize(
    ("first", "second", "secret"),
    [s[1:] for s in SPLIT_SAMPLES],
    ids=[s[0] for s in SPLIT_SAMPLES],
)
def test_secret_split_across_two_turns_is_redacted(first: str, second: str, secret: str) -> None:
    assert redact(second) == second  # alone, a word like any other
    out = redact(second, previous=first)
    assert secret not in out and out == "[REDACTED:secret]"
    assert redact(second, previous=[first, "Go ahead."]) == out  # a reply came between


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("did you change the password?", "yes"),
        ("here is the token:", "Thanks!"),
        ("my password is", "forgotten"),
        ("nice weather", "Hunt3r-0042"),
        ("my seed phrase is", "in the safe at home"),
        ("the passphrase for the vault is", "easy to remember"),
        ("nice weather", "correct horse battery staple"),
    ],
    ids=[
        "yes",
        "thanks",
        "plain-word",
        "nothing-asked",
        "seed-phrase-whereabouts",
        "passphrase-easy",
        "words-after-nothing-asked",
    ],
)
def test_an_ordinary_answer_after_a_secret_question_stays(first: str, second: str) -> None:
    assert redact(second, previous=first) == second


def test_a_lone_word_under_a_line_naming_a_secret_is_redacted_in_a_document() -> None:
    note = "## Wifi password\n\n- FakeHotspot0042\n- Router: Fritz\n\nDone\nyes\n"
    out = redact(note, keep_lines=True)
    assert out == "## Wifi password\n\n- [REDACTED:secret]\n- Router: Fritz\n\nDone\nyes\n"
    assert redact(out, keep_lines=True) == out


def test_keep_lines_keeps_a_documents_line_numbers() -> None:
    text = f"a\n{PEM}\nb password: hunter22\nc"
    out = redact(text, keep_lines=True)
    assert PEM_BODY not in out and "hunter22" not in out
    assert out.split("\n")[5:] == ["b password: [REDACTED:secret]", "c"]


_FRAGMENTS = [
    OPENAI_PROJECT,
    OPENAI_CLASSIC,
    AWS,
    GITHUB,
    GITHUB_PAT,
    SLACK,
    GOOGLE,
    JWT,
    PEM,
    "-----BEGIN EC PRIVATE KEY-----",
    "-----END EC PRIVATE KEY-----",
    "Bearer ",
    "bearer abcdefghijklmnop0123",
    "https://",
    "://user:pass@",
    "@",
    ":",
    "=",
    " is ",
    "password",
    "passwd",
    "token",
    "secret",
    "api_key",
    "api-key",
    "access_token",
    "client_secret",
    "[REDACTED:secret]",
    "[REDACTED",
    "]",
    '"',
    "'",
    ",",
    ";",
    "sk-",
    "xoxb-",
    "AKIA",
    "ghp_",
    "AIza",
    "eyJ",
    "hunter22",
    "abcd",
    "0123456789abcdef",
    " ",
    "\n",
    "--password=",
    "--pass ",
    "curl -u a:",
    "sshpass -p ",
    "mysql -p",
    "docker login -p ",
    "sk-pro\u2026",
    "...",
    "PGPASSWORD=",
    "PuTTY-User-Key-File-3: x\n",
    "Private-Lines: 1\n",
    "Private-MAC: ",
    "\\\n",
    "openssl enc -k ",
    "htpasswd -b ",
    "htpasswd -nb ",
    "echo '",
    " | docker login --password-stdin",
    "<<< ",
    "the passphrase for the vault is ",
    "recovery words are ",
    "my pin is ",
    "PIN: ",
]
_TEXT = st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=12)), max_size=14).map(
    "".join
)


@settings(max_examples=500, deadline=None)
@given(_TEXT)
@example(f"--password=[REDACTED{OPENAI_PROJECT}")  # a mark's start is no mark
# one command's redacted password leaves another's option without its command
@example("htpasswd -b openssl enc -k openssl enc -k Bearer ")
def test_property_redact_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


_TOKENS = [AWS, GITHUB, GITHUB_PAT, SLACK, GOOGLE, JWT, OPENAI_PROJECT, OPENAI_CLASSIC]
_NOISE = st.lists(
    st.one_of(st.sampled_from([f for f in _FRAGMENTS if f not in _TOKENS]), st.text(max_size=12)),
    max_size=10,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_TOKENS), _NOISE, _NOISE)
def test_property_known_token_never_survives(secret: str, before: str, after: str) -> None:
    out = redact(f"{before} {secret} {after}")
    assert secret not in out
    assert "[REDACTED:" in out


# ------------------------------------------------------------------ the whole path


def _secret_lines(secrets: list[str], haystack: bytes) -> list[str]:
    return [s for s in secrets if s.encode() in haystack]


def test_corpus_never_reaches_a_file_the_index_or_git(tmp_path: Path) -> None:
    """Every sample, sent through ``log``, ``ingest``, RPC ``log_turn`` and tool calls and
    then consolidated (skill drafts included) in a git vault, is in no file, not in the
    index and in no commit."""
    vault = tmp_path / "vault"
    assert mc(tmp_path, "init", "--git", str(vault)).returncode == 0
    (vault / "memoryclaw.yaml").write_text("consolidation:\n  skillThreshold: 2\n")
    for key, value in (("user.email", "t@example.com"), ("user.name", "t")):
        subprocess.run(["git", "-C", str(vault), "config", key, value], check=True)
    records = []
    for number, (ident, text, _) in enumerate(SAMPLES):
        session = f"s{number % 3}"
        records += [
            {"session": session, "role": "user", "content": f"{ident}: {text}"},
            {"session": session, "role": "tool_call", "tool": "lookup", "content": "{}"},
            {
                "session": session,
                "role": "tool_call",
                "tool": "send_mail",
                "content": json.dumps({"to": "ops@example.com", "body": text, "apiKey": text}),
            },
        ]
    ingested = mc(vault, "ingest", "-", stdin="".join(json.dumps(r) + "\n" for r in records))
    assert ingested.returncode == 0, ingested.stderr
    requests = [
        {"id": n, "method": "log_turn", "params": {"session": "rpc", "role": "user", "content": t}}
        for n, (_, t, _) in enumerate(SAMPLES)
    ]
    served = mc(vault, "serve", "--stdio", stdin="".join(json.dumps(r) + "\n" for r in requests))
    assert served.stdout.count('"result"') == len(SAMPLES), served.stderr
    for _, text, _ in SAMPLES[::9]:
        logged = mc(
            vault, "log", "--session", "cli", "--role", "user", "--name", text, "-", stdin=text
        )
        assert logged.returncode == 0, logged.stderr
    consolidated = mc(vault, "consolidate", "--all", "--json")
    assert consolidated.returncode == 0, consolidated.stderr
    report = json.loads(consolidated.stdout)
    assert report["commit"] and report["skills_suggested"]
    secrets = [secret for _, _, secret in SAMPLES]
    files = [p for p in sorted(vault.rglob("*")) if p.is_file() and ".git" not in p.parts]
    assert any(p.name == "index.db" for p in files)
    for path in files:
        assert _secret_lines(secrets, path.read_bytes()) == [], path
    history = subprocess.run(
        ["git", "-C", str(vault), "log", "-p", "--all"], capture_output=True, check=True
    ).stdout
    assert b"[REDACTED:" in history
    assert _secret_lines(secrets, history) == []


# ------------------------------------------------- more command lines, and secrets in prose


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"DB_PASSWORD=\\\n{_PW}", "DB_PASSWORD=\\\n[REDACTED:secret]"),
        (
            f"export PGPASSWORD=\\\n  {_PW}\npsql -h db",
            "export PGPASSWORD=\\\n  [REDACTED:secret]\npsql -h db",
        ),
        (
            f"docker login -u me \\\n  -p {_PW} registry",
            "docker login -u me \\\n  -p [REDACTED:secret] registry",
        ),
        (
            f"tool --password \\\n {_PW} --host db",
            "tool --password \\\n [REDACTED:secret] --host db",
        ),
        (
            f"openssl enc -aes-256-cbc -k {_PW} -in a -out b",
            "openssl enc -aes-256-cbc -k [REDACTED:secret] -in a -out b",
        ),
        (f"openssl enc -d -K {_PW} -iv 00", "openssl enc -d -K [REDACTED:secret] -iv 00"),
        (f"htpasswd -b .htpasswd admin {_PW}", "htpasswd -b .htpasswd admin [REDACTED:secret]"),
        (
            f"htpasswd -cB -b /etc/h admin '{_PW} x' && echo ok",
            "htpasswd -cB -b /etc/h admin '[REDACTED:secret]' && echo ok",
        ),
        (f"htpasswd -nb admin {_PW}", "htpasswd -nb admin [REDACTED:secret]"),
        (
            f"htpasswd -bB -C 12 .htpasswd admin {_PW}",
            "htpasswd -bB -C 12 .htpasswd admin [REDACTED:secret]",
        ),
        (
            f"echo {_PW} | gh auth login --with-token",
            "echo [REDACTED:secret] | gh auth login --with-token",
        ),
        (
            f"echo '{_PW}' | docker login -u me --password-stdin",
            "echo '[REDACTED:secret]' | docker login -u me --password-stdin",
        ),
        (
            f"echo -n {_PW} | podman login --password-stdin quay.io",
            "echo -n [REDACTED:secret] | podman login --password-stdin quay.io",
        ),
        (
            f"printf '%s' \"{_PW}\" | helm registry login r --password-stdin",
            "printf '%s' \"[REDACTED:secret]\" | helm registry login r --password-stdin",
        ),
        (
            f"docker login --password-stdin <<< '{_PW}'",
            "docker login --password-stdin <<< '[REDACTED:secret]'",
        ),
    ],
    ids=[
        "continued-assignment",
        "continued-env-indented",
        "continued-command",
        "continued-option",
        "openssl-k",
        "openssl-raw-key",
        "htpasswd",
        "htpasswd-quoted",
        "htpasswd-no-file",
        "htpasswd-bcrypt-cost",
        "echo-to-gh-with-token",
        "echo-to-password-stdin",
        "echo-n-to-password-stdin",
        "printf-to-password-stdin",
        "here-string-to-password-stdin",
    ],
)
def test_more_command_line_credentials_lose_only_their_value(text: str, expected: str) -> None:
    out = redact(text)
    assert out == expected
    assert redact(out) == out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "the passphrase for the vault is correct-horse-battery-staple",
            "the passphrase for the vault is [REDACTED:secret]",
        ),
        ("the passphrase is correct horse battery staple", "the passphrase is [REDACTED:secret]"),
        ("my seed phrase is alpha bravo charlie delta", "my seed phrase is [REDACTED:secret]"),
        ("recovery words are: amber orbit velvet", "recovery words are: [REDACTED:secret]"),
        ("the secret phrase was tulip-42", "the secret phrase was [REDACTED:secret]"),
        (
            "the wifi password for the upstairs guest network is Hunter2x",
            "the wifi password for the upstairs guest network is [REDACTED:secret]",
        ),
        ("my pin is 4821", "my pin is [REDACTED:secret]"),
        ("PIN: 4821", "PIN: [REDACTED:secret]"),
        ("the PIN for the bank card is 0042.", "the PIN for the bank card is [REDACTED:secret]."),
        ("door passcode is 907731", "door passcode is [REDACTED:secret]"),
        ('{"pin": "4821"}', '{"pin": "[REDACTED:secret]"}'),
    ],
    ids=[
        "passphrase-for-is",
        "passphrase-of-words",
        "seed-phrase",
        "recovery-words",
        "secret-phrase",
        "password-for-is",
        "pin-is",
        "pin-colon",
        "pin-for-is",
        "passcode-is",
        "pin-in-json",
    ],
)
def test_secrets_said_in_prose_are_redacted(text: str, expected: str) -> None:
    out = redact(text)
    assert out == expected
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "openssl enc -k",
        "openssl enc -aes-256-cbc -kfile key.txt -in a",
        "openssl req -new -key server.key",
        "htpasswd -c .htpasswd admin",
        "htpasswd -D .htpasswd admin",
        "htpasswd: see the wiki",
        "echo $PW | docker login --password-stdin",
        'echo "${REGISTRY_PW}" | docker login -u me --password-stdin',
        "cat pw.txt | docker login --password-stdin",
        "echo done | tee build.log",
        "a line ending in a backslash \\\nand the next one",
        "the passphrase is wrong",
        "the passphrase is in the safe",
        "the passphrase is correct",
        "the recovery words are written on paper",
        "the pin is in the drawer",
        "the PIN is required",
        "pin: latest",
        "pin the version to 1.2.3",
        "the secret to success is patience",
        "the token for the api is expired",
        "the passphrase is easy to remember",
        "the passphrase for the wifi is written on the fridge",
        "my mnemonic is that every good boy does fine",
        "the pin is 4 cm long",
        "my PIN code changed yesterday",
    ],
    ids=[
        "openssl-k-nothing-after",
        "openssl-kfile",
        "openssl-key-file",
        "htpasswd-prompts",
        "htpasswd-delete",
        "htpasswd-in-prose",
        "stdin-from-a-variable",
        "stdin-from-a-braced-variable",
        "stdin-from-a-file",
        "echo-to-another-command",
        "backslash-in-prose",
        "passphrase-wrong",
        "passphrase-in-the-safe",
        "passphrase-correct",
        "recovery-words-written",
        "pin-in-the-drawer",
        "pin-required",
        "pin-a-version",
        "pin-a-version-in-prose",
        "secret-to-success",
        "token-for-expired",
        "passphrase-easy-to-remember",
        "passphrase-written-on-the-fridge",
        "mnemonic-as-a-memory-aid",
        "pin-length-in-cm",
        "pin-code-changed",
    ],
)
def test_near_misses_of_the_new_rules_are_unchanged(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "unit",
    [
        "htpasswd -b -c ",
        "echo -n 'a' ",
        "echo x | ",
        "--password-stdin <<< ",
        "openssl -k ",
        "password for a b ",
        "passphrase for x is ",
        "pin for a is ",
        "pin to a is 1 ",
        "seed phrase: ",
        'passphrase is "',
        "password=\\\n",
        "docker login \\\n",
        "curl sshpass mysql -p ",
    ],
    ids=lambda unit: unit.strip().replace(" ", "-"),
)
def test_redaction_of_adversarial_text_finishes(unit: str) -> None:
    """Text made of thousands of words that start a rule: every rule looks a bounded way
    ahead, so this is linear (a rule that scanned to the end from each would take minutes)."""
    text = unit * 5000
    out = redact(text)
    assert redact(out) == out


def test_a_text_holding_no_marker_compiles_no_rule() -> None:
    """A turn that holds no rule's marker runs no rule, so a fresh ``memoryclaw log`` of it
    compiles none."""
    code = (
        "from memoryclaw.vault import secretpatterns\n"
        "from memoryclaw.vault.redact import redact\n"
        "assert redact('Lunch with Ivan at noon, then the supplier call.') == "
        "'Lunch with Ivan at noon, then the supplier call.'\n"
        "lazy = secretpatterns._LazyPattern\n"
        "rules = [v for v in vars(secretpatterns).values() if isinstance(v, lazy)]\n"
        "rules += [p for _, p in secretpatterns.PATTERNS] + list(secretpatterns.COMMAND_RES)\n"
        "print(len(rules), sum(rule._compiled is not None for rule in rules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    total, compiled = map(int, done.stdout.split())
    assert total > 30 and compiled == 1  # SHAPES: the look for card and SSN digits
