"""Where a file URL lives: a local disk, S3, or S3 mapped onto a local folder.

sparkmark's own file access (listing, publishing, manifests, crawlers) goes through
fsspec; Spark's goes through Hadoop. ``configure`` hands the S3 settings to both:

- to fsspec as the default options of the ``s3`` protocol (``fsspec.config.conf``,
  fsspec's own per-protocol configuration), served by s3fs: credentials, endpoint,
  region, and no listing cache (a run must see objects written since the last one);
- with ``s3_local_root`` set, ``s3://bucket/key`` is ``<root>/bucket/key`` on the
  local disk for fsspec, and Spark is handed the ``file://`` path (for a laptop with
  Glue scripts whose paths are hard-coded);
- to a Spark session (``prepare_spark``) as S3A settings in its Hadoop configuration,
  set in the JVM, never on a command line.

``s3``, ``s3a`` and ``s3n`` name the same objects. sparkmark keeps ``s3://`` as a
file's identity (what Glue writes in bookmarks and catalog locations) and gives Spark
``s3a://``.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

import fsspec
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.local import LocalFileSystem

from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..settings import Settings

log = logging.getLogger("sparkmark.storage")

S3_SCHEMES = ("s3", "s3a", "s3n")
S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
_HADOOP_GLOB = re.compile(r"([\\{}\[\]*?])")


class LocalBuckets(DirFileSystem):
    """``s3://bucket/key`` served from ``<root>/bucket/key`` on the local disk."""

    protocol = S3_SCHEMES
    root_marker = ""

    def __init__(self, root: str, **options: Any):
        super().__init__(path=root, fs=LocalFileSystem(auto_mkdir=True), **options)
        self.root = root

    @classmethod
    def _strip_protocol(cls, path):
        path = str(path)
        for scheme in S3_SCHEMES:
            if path.startswith(scheme + "://"):
                return path[len(scheme) + 3 :].rstrip("/")
        return path.rstrip("/")

    def unstrip_protocol(self, name: str) -> str:
        return "s3://" + name.lstrip("/")

    def local_path(self, url: str) -> str:
        return f"{self.root.rstrip('/')}/{self._strip_protocol(url)}"


def s3_options(settings: Settings) -> dict[str, Any]:
    """s3fs's options for these settings (secrets included: for the client only)."""
    options: dict[str, Any] = {"use_listings_cache": False}
    if settings.aws_access_key_id:
        options["key"] = settings.aws_access_key_id
    if settings.aws_secret_access_key:
        options["secret"] = settings.aws_secret_access_key.get_secret_value()
    if settings.aws_session_token:
        options["token"] = settings.aws_session_token.get_secret_value()
    if settings.aws_profile and not settings.aws_access_key_id:
        options["profile"] = settings.aws_profile
    client: dict[str, str] = {}
    if settings.aws_endpoint_url_s3:
        client["endpoint_url"] = settings.aws_endpoint_url_s3
    if settings.aws_region:
        client["region_name"] = settings.aws_region
    if client:
        options["client_kwargs"] = client
    return options


def configure(settings: Settings) -> None:
    """Make ``s3://`` URLs open as these settings say, for fsspec in this process."""
    for scheme in S3_SCHEMES:
        fsspec.config.conf.pop(scheme, None)
    if settings.s3_local_root is not None:
        for scheme in S3_SCHEMES:
            fsspec.register_implementation(scheme, LocalBuckets, clobber=True)
            fsspec.config.conf[scheme] = {"root": str(settings.s3_local_root)}
        return
    # A name is enough while nothing else is registered; once the local mapping was (a
    # process that configured both), only the class itself takes its place.
    implementation: Any = "s3fs.S3FileSystem"
    if any(fsspec.registry.get(scheme) is LocalBuckets for scheme in S3_SCHEMES):
        import s3fs  # type: ignore[import-untyped]

        implementation = s3fs.S3FileSystem
    for scheme in S3_SCHEMES:
        fsspec.register_implementation(scheme, implementation, clobber=True)
        fsspec.config.conf[scheme] = s3_options(settings)


def is_s3(url: str) -> bool:
    return url.partition("://")[0].lower() in S3_SCHEMES and "://" in url


def canonical(url: str) -> str:
    """``s3a://`` and ``s3n://`` URLs as ``s3://``: one identity per object."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in S3_SCHEMES:
        return f"s3://{rest}"
    return url


def spark_base_path(url: str) -> str:
    """The URL Spark should use for a folder or file sparkmark names: ``s3a://`` for S3,
    or the local file under ``s3_local_root`` when S3 is mapped there."""
    if not is_s3(url):
        return url
    fs, _ = fsspec.core.url_to_fs(url)
    if isinstance(fs, LocalBuckets):
        return "file://" + fs.local_path(url)
    return "s3a://" + url.partition("://")[2]


def spark_path(url: str) -> str:
    """As ``spark_base_path``, with Hadoop's glob characters escaped so that a file named
    ``a[1].json`` is read literally."""
    return _HADOOP_GLOB.sub(r"\\\1", spark_base_path(url))


def parquet_rows(fs: Any, path: str) -> int:
    """The rows of one Parquet file, from its footer (no Spark job)."""
    import pyarrow.parquet as pq

    with fs.open(path, "rb") as handle:
        return int(pq.ParquetFile(handle).metadata.num_rows)


def s3a_settings(settings: Settings) -> dict[str, str]:
    """Hadoop's S3A settings for these settings (secrets included: for the JVM only)."""
    conf = {"fs.s3.impl": S3A, "fs.s3n.impl": S3A}
    endpoint = settings.aws_endpoint_url_s3
    if endpoint:
        conf["fs.s3a.endpoint"] = endpoint
        conf["fs.s3a.path.style.access"] = "true"
        conf["fs.s3a.connection.ssl.enabled"] = str(endpoint.startswith("https")).lower()
    if settings.aws_region:
        conf["fs.s3a.endpoint.region"] = settings.aws_region
    elif endpoint:
        conf["fs.s3a.endpoint.region"] = "us-east-1"  # a custom endpoint ignores it; S3A wants one
    if settings.aws_access_key_id and settings.aws_secret_access_key:
        conf["fs.s3a.access.key"] = settings.aws_access_key_id
        conf["fs.s3a.secret.key"] = settings.aws_secret_access_key.get_secret_value()
        if settings.aws_session_token:
            conf["fs.s3a.session.token"] = settings.aws_session_token.get_secret_value()
            conf["fs.s3a.aws.credentials.provider"] = (
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
            )
    elif settings.aws_profile:
        # The AWS SDK's default chain reads AWS_PROFILE and ~/.aws from the JVM's environment.
        conf["fs.s3a.aws.credentials.provider"] = (
            "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
        )
    return conf


def prepare_spark(spark: SparkSession, settings: Settings) -> None:
    """Give a session the S3 settings (and ``s3://`` served by S3A) when it can serve S3.
    Settings the user gave Spark for S3A already are left as they are."""
    configure(settings)
    if settings.s3_local_root is not None:
        return
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: the server owns its Hadoop settings
        return
    if not _loadable(jvm, S3A):
        return
    wanted = s3a_settings(settings)
    context = spark.sparkContext._jsc
    given = _PREPARED.get(id(context))
    if given is not None and given[0] is context and given[1] == wanted:
        return  # this session has these settings already (a run per job in one process)
    hadoop = context.hadoopConfiguration()
    for key, value in wanted.items():
        current = hadoop.get(key)
        if current is None or key in _OURS:
            hadoop.set(key, value)
    _PREPARED[id(context)] = (context, dict(wanted))


# Per Spark context (kept, so that its id is not reused): the S3A settings it was given last;
# per JVM view and class name: whether it loads.
_PREPARED: dict[int, tuple[Any, dict[str, str]]] = {}
_LOADABLE: dict[tuple[int, str], tuple[Any, bool]] = {}


# Keys sparkmark owns once the settings name an endpoint or credentials: a session
# reused across settings (a test process) must follow the newest ones.
_OURS = frozenset({"fs.s3a.endpoint", "fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token"})


def _loadable(jvm, name: str) -> bool:
    """Whether the JVM can load class ``name``; asked once per JVM and class."""
    key = (id(jvm), name)
    known = _LOADABLE.get(key)
    if known is not None and known[0] is jvm:
        return known[1]
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(name, False, loader)
        found = True
    except Exception:  # noqa: BLE001 - not on the classpath, whatever the JVM calls it
        found = False
    _LOADABLE[key] = (jvm, found)
    return found


def address_dotted_bucket(spark: SparkSession, bucket: str) -> None:
    """A bucket with dots in its name is addressed by path (``endpoint/bucket/key``), as
    Glue reads and writes such buckets: as a host name (``bucket.endpoint``) its dots
    break the AWS SDK's request (S3A fails inside a task with "host must not be null")
    and TLS's wildcard certificate. S3A's per-bucket setting does it for this bucket
    alone, unless the user set it."""
    jsc = getattr(spark, "_jsc", None)
    if jsc is None:
        return  # Spark Connect: the server's Hadoop settings apply
    conf = jsc.hadoopConfiguration()
    key = f"fs.s3a.bucket.{bucket}.path.style.access"
    if conf.get(key) is None:
        conf.set(key, "true")


def require_s3a(spark: SparkSession, url: str) -> None:
    """One line, before Spark fails deep inside a read or write, when an S3 URL cannot be
    served: no S3A filesystem on Spark's classpath. A bucket whose name has dots is
    addressed by path (see :func:`address_dotted_bucket`)."""
    if not is_s3(url) or spark_base_path(url).startswith("file://"):
        return
    bucket = url.partition("://")[2].split("/", 1)[0]
    if "." in bucket:
        if bucket.rsplit(".", 1)[1][:1].isdigit():
            # java.net.URI reads no host from such a name, and S3A takes the bucket from it.
            raise ConfigError(
                f"S3 bucket {bucket!r} ({url}): Spark's S3A connector cannot read a bucket name whose "
                "last dotted part begins with a digit; copy the data to another bucket, or set "
                "SPARKMARK_S3_LOCAL_ROOT to map s3:// onto a local folder"
            )
        address_dotted_bucket(spark, bucket)
    jvm = getattr(spark, "_jvm", None)
    if jvm is None or _loadable(jvm, S3A):
        return
    raise ConfigError(
        f"{url} is on S3, but Spark has no S3A filesystem (hadoop-aws): run `make jars` and let "
        "sparkmark start the session, or start Spark with --packages "
        "org.apache.hadoop:hadoop-aws:<your Hadoop version>; or set SPARKMARK_S3_LOCAL_ROOT to "
        "map s3:// onto a local folder"
    )
