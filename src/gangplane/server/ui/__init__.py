"""The dashboard served at ``/ui`` (docs/dashboard.md): pure view functions (``*_view``), a thin route
module, the session login and the live event stream. Templates and vendored htmx ship in the package."""

from gangplane.server.ui.routes import ui_routes
from gangplane.server.ui.session import DashboardLogin

__all__ = ["DashboardLogin", "ui_routes"]
