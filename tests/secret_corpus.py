"""One realistic, obviously fake sample per secret format :mod:`memoryclaw.vault.redact` knows.

Every sample is assembled from pieces so that no file holds a credential-looking literal, and
every random-looking part is a fixed fake pattern: none of these is, or was, a real secret.
Each entry is ``(id, text, secret)``: ``secret`` must never survive redaction of ``text``.
"""

from __future__ import annotations

import base64

_ALNUM = "FaKe0123456789fAkE"  # the fake pattern random-looking parts are cut from


def fake(length: int, alphabet: str = _ALNUM) -> str:
    """``length`` characters of the fixed fake pattern (over ``alphabet``)."""
    return (alphabet * (length // len(alphabet) + 1))[:length]


_HEX = "0123456789abcdef"
_UPPER = "FAKE0123456789"
_B64 = "FaKe0123456789/+fAkE"
_BASIC = base64.b64encode(b"fakeuser:fake pass 1").decode()
_PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    + fake(64, _B64)
    + "\n"
    + fake(40, _B64)
    + "\n-----END PGP PRIVATE KEY BLOCK-----"
)
_RSA = "-----BEGIN RSA PRIVATE KEY-----\n" + fake(64, _B64) + "\n-----END RSA PRIVATE KEY-----"

_PW = "Fake" + "Pw" + "0042x"  # a password typed on a command line
_PUTTY_PRIVATE = fake(44, "PuTTy0042pRiV+/kEy")
_PUTTY = (
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: fake-key-0042\n"
    "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI" + fake(24, _B64) + "\n" + fake(20, _B64) + "\n"
    "Private-Lines: 1\n" + _PUTTY_PRIVATE + "\nPrivate-MAC: " + fake(64, _HEX)
)
MASKED_TAIL = "q7Zx"
_SPLIT = "SpLiT0042tOkEn9xQ"  # the visible tail of a key a masking tool printed

SAMPLES: list[tuple[str, str, str]] = [
    ("stripe-live", "charge with sk_" + "live_" + fake(24), "sk_live_" + fake(24)),
    ("stripe-restricted", "rk_" + "live_" + fake(24) + " is read only", "rk_live_" + fake(24)),
    ("stripe-webhook", "signing secret whsec_" + fake(32), "whsec_" + fake(32)),
    ("openai", "key sk-proj-" + fake(40) + " works", "sk-proj-" + fake(40)),
    ("anthropic", "use sk-ant-api03-" + fake(40), "sk-ant-api03-" + fake(40)),
    ("aws-key-id", "id AKIA" + fake(16, _UPPER) + " ok", "AKIA" + fake(16, _UPPER)),
    ("aws-secret-env", "export AWS_SECRET_ACCESS_KEY=" + fake(40, _B64), fake(40, _B64)),
    (
        "aws-secret-ini",
        "[default]\naws_secret_access_key = " + fake(40, _B64[::-1]) + "\nregion = eu",
        fake(40, _B64[::-1]),
    ),
    ("env-password", "DB_PASSWORD=Fake-Pass-0042", "Fake-Pass-0042"),
    ("env-api-key", "MAILER_API_KEY=fake0042fake0042", "fake0042fake0042"),
    ("env-token", "CI_DEPLOY_TOKEN=fake-token-0042", "fake-token-0042"),
    ("env-secret", "SESSION_SECRET=fake-secret-0042", "fake-secret-0042"),
    ("password-is-colon", "the password is: Fake!Pass 0042", "Fake!Pass 0042"),
    ("password-is", "my password is FakePass0042.", "FakePass0042"),
    ("password-spaces", "password: fake horse battery staple", "fake horse battery staple"),
    ("password-at", "password=f@ke-p@ss-0042", "f@ke-p@ss-0042"),
    ("pass-colon", "wifi pass: FakeWifi0042", "FakeWifi0042"),
    ("json-pass", '{"user": "bob", "pass": "Fake#Pass 0042"}', "Fake#Pass 0042"),
    ("json-smtp-password", '{"smtp_password": "fake smtp 0042"}', "fake smtp 0042"),
    ("quoted-api-key", "api_key = 'fake0042key'", "fake0042key"),
    ("slack-bot", "xoxb-0042-" + fake(24), "xoxb-0042-" + fake(24)),
    ("slack-refresh", "xoxe-1-" + fake(40), "xoxe-1-" + fake(40)),
    ("slack-rotating", "xoxe.xoxp-1-" + fake(40), "xoxe.xoxp-1-" + fake(40)),
    ("slack-app", "xapp-1-" + fake(30), "xapp-1-" + fake(30)),
    (
        "slack-webhook",
        "post to https://hooks.slack.com/services/T0FAKE00/B0FAKE00/" + fake(24),
        "T0FAKE00/B0FAKE00/" + fake(24),
    ),
    (
        "discord-webhook",
        "https://discord.com/api/webhooks/000000000000000042/" + fake(60),
        fake(60),
    ),
    ("pgp-private-key", "key:\n" + _PGP + "\nend", fake(64, _B64)),
    ("rsa-private-key", _RSA, fake(64, _B64)),
    (
        "openssh-truncated",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + fake(60, _B64),
        fake(60, _B64),
    ),
    (
        "service-account-json",
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + fake(60, _B64)
        + '\\n-----END PRIVATE KEY-----\\n"}',
        fake(60, _B64),
    ),
    ("basic-auth", "Authorization: Basic " + _BASIC, _BASIC),
    ("bearer", "Authorization: Bearer " + fake(32), fake(32)),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9." + "eyJ" + fake(20) + "." + fake(30),
        "eyJ" + fake(20) + "." + fake(30),
    ),
    ("url-credentials", "https://bob:FakeUrlPw0042@git.example.com/r.git", "FakeUrlPw0042"),
    ("redis-password-only", "redis://:FakeRedisPw0042@cache.example.com:6379/0", "FakeRedisPw0042"),
    (
        "azure-storage",
        "DefaultEndpointsProtocol=https;AccountName=fake;AccountKey="
        + fake(86, _B64)
        + "==;EndpointSuffix=core.windows.net",
        fake(86, _B64),
    ),
    ("azure-client-secret", "secret value abc8Q~" + fake(34), "8Q~" + fake(34)),
    ("github-classic", "ghp_" + fake(36), "ghp_" + fake(36)),
    ("github-fine-grained", "github_pat_11" + fake(60), "github_pat_11" + fake(60)),
    ("gitlab", "glpat-" + fake(20), "glpat-" + fake(20)),
    ("google-api", "AIza" + fake(35), "AIza" + fake(35)),
    ("google-oauth", "ya29." + fake(40), "ya29." + fake(40)),
    ("huggingface", "hf_" + fake(34), "hf_" + fake(34)),
    ("npm", "//registry.npmjs.org/:_authToken=npm_" + fake(36), "npm_" + fake(36)),
    ("pypi", "pypi-AgEIcHlwaS5vcmc" + fake(60), "pypi-AgEIcHlwaS5vcmc" + fake(60)),
    ("sendgrid", "SG." + fake(22) + "." + fake(43), "SG." + fake(22) + "." + fake(43)),
    ("telegram-bot", "bot 123456789:AA" + fake(33), "123456789:AA" + fake(33)),
    ("docker-hub", "dckr_pat_" + fake(27), "dckr_pat_" + fake(27)),
    ("digitalocean", "dop_v1_" + fake(64, _HEX), "dop_v1_" + fake(64, _HEX)),
    ("shopify", "shpat_" + fake(32, _HEX), "shpat_" + fake(32, _HEX)),
    ("square", "sq0atp-" + fake(22), "sq0atp-" + fake(22)),
    ("vault", "hvs." + fake(24), "hvs." + fake(24)),
    ("linear", "lin_api_" + fake(40), "lin_api_" + fake(40)),
    ("postman", "PMAK-" + fake(24, _HEX) + "-" + fake(34, _HEX), fake(24, _HEX)),
    ("new-relic", "NRAK-" + fake(27, _UPPER), "NRAK-" + fake(27, _UPPER)),
    ("grafana", "glsa_" + fake(32) + "_" + fake(8, _HEX), "glsa_" + fake(32)),
    ("notion", "ntn_" + fake(46), "ntn_" + fake(46)),
    ("databricks", "dapi" + fake(32, _HEX), "dapi" + fake(32, _HEX)),
    ("rubygems", "rubygems_" + fake(48, _HEX), "rubygems_" + fake(48, _HEX)),
    ("doppler", "dp.pt." + fake(43), "dp.pt." + fake(43)),
    ("sentry", "sntrys_" + fake(40), "sntrys_" + fake(40)),
    ("age", "AGE-SECRET-KEY-1" + fake(58, _UPPER), "AGE-SECRET-KEY-1" + fake(58, _UPPER)),
    (
        "terraform-cloud",
        fake(14, _HEX) + ".atlasv1." + fake(60),
        fake(14, _HEX) + ".atlasv1." + fake(60),
    ),
    ("twilio", "SK" + fake(32, _HEX), "SK" + fake(32, _HEX)),
    ("mailgun", "key-" + fake(32), "key-" + fake(32)),
    ("mailchimp", fake(32, _HEX) + "-us6", fake(32, _HEX) + "-us6"),
    ("card-spaced", "card 4111 1111 1111 1111 exp 12/30", "4111 1111 1111 1111"),
    ("card-dashed", "card 5555-5555-5555-4444", "5555-5555-5555-4444"),
    ("card-plain", "card 378282246310005 amex", "378282246310005"),
    ("ssn", "SSN 123-45-6789 on file", "123-45-6789"),
    ("entropy-after-token", "use this token Fk29xQ7pLm3ZtR8vWc1Y now", "Fk29xQ7pLm3ZtR8vWc1Y"),
    (
        "entropy-after-key",
        "the signing key for prod is " + fake(32, _B64),
        fake(32, _B64),
    ),
    # credentials on a command line: only the value goes, the command stays
    ("postgres-url", "psql postgres://app:" + _PW + "@db.example.com:5432/app", _PW),
    ("pgpassword-env", "PGPASSWORD=" + _PW + "a psql -h db.internal app", _PW + "a"),
    ("curl-user", "curl -u admin:" + _PW + "b https://api.example.com/v1", _PW + "b"),
    ("curl-user-quoted", 'curl -su "admin:' + _PW + ' c" https://x.example', _PW + " c"),
    ("sshpass", "sshpass -p '" + _PW + "d' ssh deploy@host", _PW + "d"),
    ("sshpass-env", "SSHPASS=" + _PW + "e sshpass -e ssh host", _PW + "e"),
    ("mysql-fused", "mysql -h db -u app -p" + _PW + "f appdb", _PW + "f"),
    ("pass-option", "backup-tool --pass " + _PW + "g --verbose", _PW + "g"),
    ("password-option-equals", "tool --password=" + _PW + "h --host db --port 5432", _PW + "h"),
    ("token-option", "deploy --api-token " + _PW + "i --env prod", _PW + "i"),
    ("openssl-pass", "openssl enc -aes256 -pass pass:" + _PW + "j -in f", _PW + "j"),
    ("docker-login", "docker login -u bob -p " + _PW + "k registry.example.com", _PW + "k"),
    ("redis-cli", "redis-cli -h cache -a " + _PW + "l ping", _PW + "l"),
    ("ssh-keygen-passphrase", "ssh-keygen -t ed25519 -N '" + _PW + " m' -f k", _PW + " m"),
    ("sqlcmd", "sqlcmd -S db -U sa -P " + _PW + "n -Q 'select 1'", _PW + "n"),
    ("7zip", "7z a -p" + _PW + "o backup.7z notes/", _PW + "o"),
    ("az-login", "az login -u bob@example.com -p " + _PW + "p", _PW + "p"),
    (
        "line-continuation",
        "export DB_PASSWORD=\\\n  " + _PW + "q\npsql -h db app",
        _PW + "q",
    ),
    ("openssl-k", "openssl enc -aes-256-cbc -k " + _PW + "r -in a.txt -out a.enc", _PW + "r"),
    ("htpasswd", "htpasswd -b .htpasswd admin " + _PW + "s", _PW + "s"),
    (
        "password-stdin",
        "echo '" + _PW + "t' | docker login -u me --password-stdin registry.example.com",
        _PW + "t",
    ),
    # secrets said in prose: a passphrase (to the end of the line), recovery words, a PIN
    (
        "passphrase-prose",
        "the passphrase for the vault is correct-horse-" + "battery-staple-0042",
        "correct-horse-" + "battery-staple-0042",
    ),
    (
        "recovery-words",
        "my recovery words are: amber orbit " + "velvet canyon fake0042",
        "velvet canyon fake0042",
    ),
    ("pin", "the PIN for the bank card is 73920418.", "73920418"),
    (
        "seed-phrase-colon",
        "seed phrase: abandon ability " + "able about",
        "abandon ability " + "able about",
    ),
    (
        "seed-words-colon",
        "Seed words: cactus dolphin " + "ember fossil",
        "cactus dolphin ember fossil",
    ),
    (
        "passphrase-quoted",
        'the passphrase is "correct horse ' + 'battery staple"',
        "correct horse battery staple",
    ),
    ("pin-to-the-card", "the PIN to my bank card is 58304719", "58304719"),
    ("pin-code-spaced-digits", "my pin code is 4 8 2 1", "4 8 2 1"),
    ("pin-dashed-digits", "the pin is 6-3-9-7", "6-3-9-7"),
    ("passcode-for-spaced-digits", "The passcode for the door is 1 9 8 4", "1 9 8 4"),
    ("putty-key", "my key file:\n" + _PUTTY + "\nend", _PUTTY_PRIVATE),
    (
        "putty-private-lines",
        "Private-Lines: 1\n" + fake(44, "bOdY0042pRiV+/LiNe") + "\n",
        fake(44, "bOdY0042pRiV+/LiNe"),
    ),
    # a key as a masking tool (OpenClaw's config view) prints it: its tail is a fragment
    (
        "masked-key",
        "OpenAI key sk-pro\u2026" + MASKED_TAIL + " is set",
        "sk-pro\u2026" + MASKED_TAIL,
    ),
    ("masked-key-dots", "token ghp_...W3" + MASKED_TAIL + " expired", "W3" + MASKED_TAIL),
]

# A secret said in two turns: the first names it, the second is the value alone (a reply may
# come between them).  Each entry is ``(id, first turn, second turn, secret)``.
SPLIT_SAMPLES: list[tuple[str, str, str, str]] = [
    ("split-password", "my database password is", "Hunt3r-" + fake(8), "Hunt3r-" + fake(8)),
    ("split-token-asked", "what is the deploy token?", fake(24, _SPLIT), fake(24, _SPLIT)),
    ("split-wifi", "wifi password:", "Fake" + "Hotspot" + "0042!", "Fake" + "Hotspot" + "0042!"),
    (
        "split-seed-phrase",
        "my seed phrase is",
        "abandon ability able about above absent absorb abstract absurd abuse access accident",
        "abandon ability able about above absent absorb abstract absurd abuse access accident",
    ),
    (
        "split-passphrase-for",
        "the passphrase for the vault is",
        "tulip anchor " + "marble ninety",
        "tulip anchor marble ninety",
    ),
]
