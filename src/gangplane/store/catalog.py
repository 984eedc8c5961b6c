"""The catalog of resource types gangplane knows: every kind the control plane serves, in one place.

Scopes, short names and status subresources follow the upstream CustomResourceDefinitions and the Kubernetes
built-ins. Controllers, schedulers and agents name the types they touch through the constants below; the API
server serves exactly ``RESOURCE_TYPES``. Nothing here performs I/O.
"""

from __future__ import annotations

from gangplane.store.base import ResourceType

_CORE = ""
_BATCH = "batch"
_TRAINER = "trainer.kubeflow.org"
_KUEUE = "kueue.x-k8s.io"


def _rt(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    cluster: bool = False,
    status: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
) -> ResourceType:
    return ResourceType(group, version, kind, plural, not cluster, status, short, categories)


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    _rt(_CORE, "v1", "Namespace", "namespaces", cluster=True, short=("ns",)),
    _rt(_CORE, "v1", "Node", "nodes", cluster=True, short=("no",)),
    _rt(_CORE, "v1", "Pod", "pods", short=("po",), categories=("all",)),
    _rt(_CORE, "v1", "Event", "events", status=False, short=("ev",)),
    _rt(_CORE, "v1", "ConfigMap", "configmaps", status=False, short=("cm",)),
    _rt(_CORE, "v1", "Secret", "secrets", status=False),
    _rt(_CORE, "v1", "ServiceAccount", "serviceaccounts", status=False, short=("sa",)),
    _rt(_CORE, "v1", "Service", "services", short=("svc",), categories=("all",)),
    _rt(_CORE, "v1", "PersistentVolumeClaim", "persistentvolumeclaims", short=("pvc",)),
    _rt(_CORE, "v1", "PersistentVolume", "persistentvolumes", cluster=True, short=("pv",)),
    _rt("storage.k8s.io", "v1", "StorageClass", "storageclasses", cluster=True, status=False, short=("sc",)),
    _rt(_BATCH, "v1", "Job", "jobs", categories=("all",)),
    _rt(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        cluster=True,
        status=False,
        short=("pc",),
    ),
    _rt("coordination.k8s.io", "v1", "Lease", "leases", status=False),
    _rt(_TRAINER, "v1alpha1", "TrainJob", "trainjobs"),
    _rt(_TRAINER, "v1alpha1", "TrainingRuntime", "trainingruntimes", status=False),
    _rt(
        _TRAINER, "v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", cluster=True, status=False
    ),
    _rt("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
    _rt("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", short=("pg", "pgs")),
    _rt(
        "scheduling.volcano.sh",
        "v1beta1",
        "PodGroup",
        "podgroups",
        status=False,
        short=("pg", "podgroup-v1beta1"),
    ),
    _rt("scheduling.volcano.sh", "v1beta1", "Queue", "queues", cluster=True, short=("q", "queue-v1beta1")),
    _rt("topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", cluster=True, short=("hn",)),
    _rt(
        _KUEUE,
        "v1beta2",
        "ResourceFlavor",
        "resourceflavors",
        cluster=True,
        status=False,
        short=("flavor", "flavors", "rf"),
    ),
    _rt(_KUEUE, "v1beta2", "ClusterQueue", "clusterqueues", cluster=True, short=("cq",)),
    _rt(_KUEUE, "v1beta2", "Cohort", "cohorts", cluster=True, short=("co",)),
    _rt(_KUEUE, "v1beta2", "LocalQueue", "localqueues", short=("queue", "queues", "lq")),
    _rt(
        _KUEUE,
        "v1beta2",
        "WorkloadPriorityClass",
        "workloadpriorityclasses",
        cluster=True,
        status=False,
        short=("wpc",),
    ),
    _rt(_KUEUE, "v1beta2", "Workload", "workloads", short=("kwl", "kueueworkload", "kueueworkloads")),
    _rt(_KUEUE, "v1beta2", "Topology", "topologies", cluster=True, status=False, short=("topo",)),
    _rt("scheduling.run.ai", "v2", "Queue", "queues", cluster=True),
    _rt("scheduling.run.ai", "v2alpha2", "PodGroup", "podgroups", short=("pg",)),
)


def _find(api_version: str, kind: str) -> ResourceType:
    return next(rt for rt in RESOURCE_TYPES if (rt.api_version, rt.kind) == (api_version, kind))


NAMESPACES = _find("v1", "Namespace")
NODES = _find("v1", "Node")
PODS = _find("v1", "Pod")
EVENTS = _find("v1", "Event")
CONFIGMAPS = _find("v1", "ConfigMap")
SECRETS = _find("v1", "Secret")
SERVICE_ACCOUNTS = _find("v1", "ServiceAccount")
SERVICES = _find("v1", "Service")
PERSISTENT_VOLUME_CLAIMS = _find("v1", "PersistentVolumeClaim")
PERSISTENT_VOLUMES = _find("v1", "PersistentVolume")
STORAGE_CLASSES = _find("storage.k8s.io/v1", "StorageClass")
JOBS = _find("batch/v1", "Job")
PRIORITY_CLASSES = _find("scheduling.k8s.io/v1", "PriorityClass")
LEASES = _find("coordination.k8s.io/v1", "Lease")
TRAINJOBS = _find("trainer.kubeflow.org/v1alpha1", "TrainJob")
TRAINING_RUNTIMES = _find("trainer.kubeflow.org/v1alpha1", "TrainingRuntime")
CLUSTER_TRAINING_RUNTIMES = _find("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime")
JOBSETS = _find("jobset.x-k8s.io/v1alpha2", "JobSet")
COSCHEDULING_PODGROUPS = _find("scheduling.x-k8s.io/v1alpha1", "PodGroup")
VOLCANO_PODGROUPS = _find("scheduling.volcano.sh/v1beta1", "PodGroup")
VOLCANO_QUEUES = _find("scheduling.volcano.sh/v1beta1", "Queue")
HYPERNODES = _find("topology.volcano.sh/v1alpha1", "HyperNode")
RESOURCE_FLAVORS = _find("kueue.x-k8s.io/v1beta2", "ResourceFlavor")
CLUSTER_QUEUES = _find("kueue.x-k8s.io/v1beta2", "ClusterQueue")
COHORTS = _find("kueue.x-k8s.io/v1beta2", "Cohort")
LOCAL_QUEUES = _find("kueue.x-k8s.io/v1beta2", "LocalQueue")
WORKLOAD_PRIORITY_CLASSES = _find("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass")
WORKLOADS = _find("kueue.x-k8s.io/v1beta2", "Workload")
TOPOLOGIES = _find("kueue.x-k8s.io/v1beta2", "Topology")
KAI_QUEUES = _find("scheduling.run.ai/v2", "Queue")
KAI_PODGROUPS = _find("scheduling.run.ai/v2alpha2", "PodGroup")


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    """The type an object with this ``apiVersion``/``kind`` is stored under (Kueue v1beta1 maps to v1beta2)."""
    if api_version == "kueue.x-k8s.io/v1beta1":
        api_version = "kueue.x-k8s.io/v1beta2"
    return next((rt for rt in RESOURCE_TYPES if (rt.api_version, rt.kind) == (api_version, kind)), None)
