"""Amazon MSK IAM for deltasink's own Kafka calls: an OAUTHBEARER token from AWS's signer.

Java clients log in to MSK with ``sasl.mechanism=AWS_MSK_IAM`` and AWS's ``IAMLoginModule``
(or OAUTHBEARER with its ``IAMOAuthBearerLoginCallbackHandler``). librdkafka has neither; AWS's
signer for Python clients (``aws-msk-iam-sasl-signer-python``, the ``msk`` extra) makes the same
signed token, which librdkafka sends as an OAUTHBEARER token from its ``oauth_cb``. The JAAS
options carry over: ``awsProfileName`` (a profile), ``awsRoleArn`` with ``awsRoleSessionName``
(a role to assume), or neither (the default AWS credential chain, as in Java).

The region is the cluster's, read from the bootstrap host
(``b-1.c.abc.c2.kafka.eu-west-1.amazonaws.com``, ``boot-x.c1.kafka-serverless.us-east-1...``),
else ``awsStsRegion``, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``.

Tokens are signed locally; getting credentials (a profile's SSO, an assumed role) may ask AWS.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from pipelines.errors import OwnClientUnavailable

_HOST_REGION = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com")


def region_of(bootstrap: str, settings: Mapping[str, str],
              environ: Mapping[str, str] | None = None) -> str | None:
    """The cluster's AWS region: from the bootstrap host, the JAAS, or the environment."""
    found = _HOST_REGION.search(bootstrap)
    if found:
        return found[1]
    environ = os.environ if environ is None else environ
    return (settings.get("awsStsRegion") or environ.get("AWS_REGION")
            or environ.get("AWS_DEFAULT_REGION"))


def token_callback(region: str, settings: Mapping[str, str]) -> Callable[[str], tuple[str, float]]:
    """librdkafka's ``oauth_cb``: a fresh signed token and its expiry (epoch seconds).

    Raises:
        OwnClientUnavailable: the signer is not installed.
    """
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    except ImportError:
        raise OwnClientUnavailable(
            "AWS_MSK_IAM: AWS's signer for Python clients is not installed (pip install "
            "'deltasink[msk]', i.e. aws-msk-iam-sasl-signer-python)") from None
    profile, role = settings.get("awsProfileName"), settings.get("awsRoleArn")

    def oauth_cb(_config: str) -> tuple[str, float]:
        if role:
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(
                region, role, settings.get("awsRoleSessionName", "deltasink"))
        elif profile:
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_profile(
                region, profile)
        else:
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
        return str(token), float(expiry_ms) / 1000.0

    return oauth_cb


def msk_iam_config(options: Mapping[str, str], settings: Mapping[str, str]) -> dict[str, Any]:
    """The librdkafka login for an MSK IAM ``options`` (JAAS options in ``settings``).

    Raises:
        OwnClientUnavailable: no region can be told, or the signer is not installed.
    """
    region = region_of(options.get("bootstrap.servers", ""), settings)
    if region is None:
        raise OwnClientUnavailable(
            "AWS_MSK_IAM: the cluster's region is not in the bootstrap host; set AWS_REGION")
    return {"sasl.mechanism": "OAUTHBEARER", "oauth_cb": token_callback(region, settings)}
