"""Every component that keeps tables in the state store, as this release has them: what
``sparkmark store check`` reports on and the upgrade tests open. A service's store
registers its component when its module is imported; this module imports them all."""

from __future__ import annotations

from ..athena.records import COMPONENT as ATHENA
from ..catalog.kept_documents import COMPONENT as CATALOG_DOCUMENTS
from ..catalog.schema_registry import COMPONENT as SCHEMA_REGISTRY
from ..catalog.store import COMPONENT as CATALOG
from ..connections.records import COMPONENT as CONNECTIONS
from ..crawler.classifiers import COMPONENT as CLASSIFIERS
from ..crawler.store import COMPONENT as CRAWLERS
from ..engine.schema import BOOKMARKS
from ..quality.store import COMPONENT as QUALITY
from ..quality_service.records import COMPONENT as QUALITY_SERVICE
from ..runtime.metric_store import COMPONENT as METRICS
from ..sessions.records import COMPONENT as SESSIONS
from ..state.components import Component
from ..state.handle import StoreHandle
from ..workflow.records import COMPONENT as WORKFLOWS
from ..workflow.registry import COMPONENT as DEFINITIONS
from .tags import COMPONENT as TAGS

COMPONENTS: tuple[Component, ...] = (
    BOOKMARKS,
    CATALOG,
    CATALOG_DOCUMENTS,
    SCHEMA_REGISTRY,
    CRAWLERS,
    CLASSIFIERS,
    QUALITY,
    WORKFLOWS,
    DEFINITIONS,
    SESSIONS,
    CONNECTIONS,
    METRICS,
    TAGS,
    ATHENA,
    QUALITY_SERVICE,
)


def open_all(state: StoreHandle) -> None:
    """Bring every component's tables in ``state`` up to this release."""
    for component in COMPONENTS:
        state.open_component(component)
