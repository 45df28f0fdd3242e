"""The contexts a workflow run sees, per triggering event, for the workflow
tests: the ``github`` context and ``github.event`` shaped as GitHub documents
each event's payload (only the fields, with made-up values).

* https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows
  (``schedule``: GITHUB_SHA "last commit on default branch", GITHUB_REF
  "default branch"; ``workflow_dispatch``: the branch or tag it was started
  on; ``push``: the pushed ref).
* https://docs.github.com/en/webhooks/webhook-events-and-payloads: the
  payloads.  A cron run's payload is only ``{"schedule": CRON}``: it has no
  ``repository``, ``sender`` or ``inputs``; its ``inputs`` context is empty.
"""
from __future__ import annotations

import copy
from typing import Any

OWNER, NAME = "example-org", "xla-dynamo-bench"
DEFAULT_BRANCH = "main"
SHA = "0123456789abcdef0123456789abcdef01234567"

REPOSITORY = {  # the `repository` object of webhook payloads (the fields a workflow may read)
    "id": 1, "name": NAME, "full_name": f"{OWNER}/{NAME}", "private": False,
    "owner": {"login": OWNER, "type": "Organization"}, "html_url": f"https://github.com/{OWNER}/{NAME}",
    "default_branch": DEFAULT_BRANCH, "fork": False, "visibility": "public",
}
SENDER = {"login": "octocat", "id": 2, "type": "User"}


def payload(event: str, ref: str, inputs: dict | None = None, cron: str = "17 2 * * *",
            default_branch: str = DEFAULT_BRANCH) -> dict:
    repository = {**REPOSITORY, "default_branch": default_branch}
    if event == "schedule":
        return {"schedule": cron}
    if event == "workflow_dispatch":
        return {"inputs": dict(inputs or {}), "ref": ref, "repository": repository, "sender": SENDER,
                "workflow": ".github/workflows/nightly.yml"}
    if event == "push":
        return {"ref": ref, "before": "0" * 40, "after": SHA, "base_ref": None, "created": False,
                "deleted": False, "forced": False, "compare": "", "commits": [], "head_commit": {"id": SHA},
                "pusher": {"name": "octocat"}, "repository": repository, "sender": SENDER}
    if event == "pull_request":
        return {"action": "synchronize", "number": 7, "repository": repository, "sender": SENDER,
                "pull_request": {"number": 7, "head": {"ref": "topic", "sha": SHA},
                                 "base": {"ref": default_branch, "sha": SHA}}}
    raise KeyError(event)


def github(event: str, *, ref: str | None = None, inputs: dict | None = None, workspace: str = "/work",
           run_id: int = 1000, run_attempt: int = 1, job: str = "", default_branch: str = DEFAULT_BRANCH) -> dict:
    """The ``github`` context of a run triggered by ``event`` in a repository
    whose default branch is ``default_branch`` (on that branch unless ``ref``
    says otherwise: a cron run always is)."""
    if ref is None:
        ref = "refs/pull/7/merge" if event == "pull_request" else f"refs/heads/{default_branch}"
    return {
        "event_name": event, "event": payload(event, ref, inputs, default_branch=default_branch),
        "ref": ref, "ref_name": ref.split("/", 2)[-1] if ref.startswith("refs/heads/") else ref.split("/")[-1],
        "ref_type": "tag" if ref.startswith("refs/tags/") else "branch", "ref_protected": False,
        "sha": SHA, "head_ref": "topic" if event == "pull_request" else "",
        "base_ref": default_branch if event == "pull_request" else "",
        "repository": f"{OWNER}/{NAME}", "repository_owner": OWNER, "repository_id": "1",
        "repositoryUrl": f"git://github.com/{OWNER}/{NAME}.git",
        "run_id": str(run_id), "run_number": "1", "run_attempt": str(run_attempt),
        "workflow": "nightly", "workflow_ref": f"{OWNER}/{NAME}/.github/workflows/nightly.yml@{ref}",
        "job": job, "action": "", "actor": "octocat", "triggering_actor": "octocat",
        "server_url": "https://github.com", "api_url": "https://api.github.com",
        "graphql_url": "https://api.github.com/graphql", "workspace": workspace, "token": "***",
        "retention_days": "90", "secret_source": "Actions", "path": "", "env": "",
        "output": "", "state": "", "step_summary": "",
    }


def inputs_context(event: str, workflow: dict, given: dict | None = None) -> dict:
    """``inputs``: the dispatch inputs with their defaults filled in; empty
    on any other event."""
    if event != "workflow_dispatch":
        return {}
    declared = (workflow.get(True) or workflow.get("on") or {}).get("workflow_dispatch") or {}
    values = {name: spec.get("default") for name, spec in (declared.get("inputs") or {}).items()}
    values.update(given or {})
    return copy.deepcopy(values)


def runner() -> dict[str, Any]:
    return {"os": "Linux", "arch": "X64", "name": "GitHub Actions 1", "temp": "/tmp/runner",
            "tool_cache": "/opt/hostedtoolcache", "environment": "github-hosted", "debug": ""}
