"""Labels JobSet puts on its Jobs and pods, and the Indexed-Job completion index (upstream
jobset/api/jobset/v1alpha2/jobset_types.go, batch/v1 types.go). A module without models, so readers of pods
such as the CLI need not load pydantic's JobSet models; ``gangplane.api.jobset`` re-exports them."""

from __future__ import annotations

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

__all__ = ["COMPLETION_INDEX", "JOBSET_NAME_LABEL", "JOB_INDEX_LABEL", "REPLICATED_JOB_NAME_LABEL"]
