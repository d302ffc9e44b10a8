//! The reverse proxy: the route table, the per-request pipeline ([`forward`]), response
//! bodies ([`body`]), bounded whole-body reads ([`read`]), header rules ([`headers`]), idle
//! client connections ([`idle`]), upstream clients ([`upstream`]), per-route request metrics
//! ([`request_metrics`]), access lines and request spans ([`observe`]), the accept loop
//! ([`server`]) and connection draining at shutdown ([`drain`]).

pub mod answer;
pub mod body;
pub mod drain;
mod driven;
pub mod forward;
pub mod headers;
pub mod idle;
pub mod oauth;
pub mod observe;
pub mod read;
pub mod request_metrics;
pub mod respond;
pub mod server;
pub mod sse_judge;
pub mod upstream;

use crate::enforce::Enforcer;
use crate::metrics::Metrics;
use crate::settings::{RouteProtocol, RouteSettings, Settings};
use body::RelayMetrics;
use request_metrics::RequestMetrics;
use std::sync::Arc;
use upstream::Upstream;

/// One route: a path prefix on the gateway in front of one upstream MCP endpoint.
pub struct Route {
    /// What it was built from: a reload keeps a route whose source is unchanged (and its
    /// idle upstream connections).
    source: RouteSource,
    pub name: Arc<str>,
    /// `mcp`: every message judged; `http`: proxied without reading it as MCP.
    pub protocol: RouteProtocol,
    /// `host:port` of the upstream, for audit events.
    pub upstream_label: Arc<str>,
    /// The configured prefix without a trailing `/` (`""` for a route at `/`).
    prefix: String,
    /// `scheme://authority` of the upstream.
    upstream_origin: String,
    /// The upstream base path exactly as configured (used when the request has no rest).
    upstream_path: String,
    /// The same without a trailing `/`, joined with a non-empty rest.
    upstream_path_trimmed: String,
    /// `upstream_origin` + `upstream_path`, parsed once: the target of every request to the
    /// prefix itself without a query (the usual MCP `POST /mcp`).
    base_uri: http::Uri,
    pub upstream: Upstream,
    /// Bounds on the gateway's own answers to this upstream (per worker).
    pub answers: answer::AnswerLimit,
    /// This route's relay counters, resolved once.
    pub relay_metrics: RelayMetrics,
    /// This route's request counters and latency histograms.
    pub request_metrics: RequestMetrics,
}

/// A route's configuration and the bytes of its CA bundle, as read when it was built.
#[derive(Clone, PartialEq, Eq)]
struct RouteSource {
    name: String,
    protocol: RouteProtocol,
    path: String,
    upstream: String,
    ca_file: Option<std::path::PathBuf>,
    ca_pem: Option<Vec<u8>>,
}

impl RouteSource {
    fn read(settings: &RouteSettings) -> Self {
        Self {
            name: settings.name.clone(),
            protocol: settings.protocol,
            path: settings.path.clone(),
            upstream: settings.upstream.clone(),
            ca_file: settings.ca_file.clone(),
            ca_pem: settings
                .ca_file
                .as_ref()
                .and_then(|f| std::fs::read(f).ok()),
        }
    }

    fn is_https(&self) -> bool {
        self.upstream
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    }
}

impl Route {
    fn new(settings: &RouteSettings, config: &Settings, metrics: &Metrics) -> anyhow::Result<Self> {
        Self::from_source(RouteSource::read(settings), settings, config, metrics)
    }

    fn from_source(
        source: RouteSource,
        settings: &RouteSettings,
        config: &Settings,
        metrics: &Metrics,
    ) -> anyhow::Result<Self> {
        let name = settings.name.as_str();
        let relay_metrics = RelayMetrics {
            idle_timeouts: metrics
                .upstream_errors
                .with_label_values(&[name, "stream_idle_timeout"]),
            body_errors: metrics.upstream_errors.with_label_values(&[name, "body"]),
            sse_events: metrics.sse_events.with_label_values(&[name]),
            sse_open: metrics.sse_streams_open.with_label_values(&[name]),
        };
        let url = url::Url::parse(&settings.upstream)?;
        let origin = url.origin().ascii_serialization();
        let label = format!(
            "{}:{}",
            url.host_str().unwrap_or_default(),
            url.port_or_known_default().unwrap_or_default()
        );
        let base_uri = format!("{origin}{}", url.path()).parse()?;
        let route_name: Arc<str> = Arc::from(name);
        Ok(Self {
            protocol: source.protocol,
            source,
            name: route_name.clone(),
            upstream_label: Arc::from(label),
            prefix: settings.path.trim_end_matches('/').to_owned(),
            upstream_origin: origin,
            upstream_path: url.path().to_owned(),
            upstream_path_trimmed: url.path().trim_end_matches('/').to_owned(),
            base_uri,
            upstream: Upstream::new(
                &url,
                settings.ca_file.as_deref(),
                config.timeouts.upstream_connect,
                config.timeouts.upstream_first_byte,
            )?,
            answers: answer::AnswerLimit::new(),
            relay_metrics,
            request_metrics: RequestMetrics::new(route_name, metrics),
        })
    }

    /// The rest of `path` after this route's prefix, if the prefix matches on a segment
    /// boundary (`/mcp` matches `/mcp` and `/mcp/x`, not `/mcpx`).
    fn rest<'p>(&self, path: &'p str) -> Option<&'p str> {
        let rest = path.strip_prefix(self.prefix.as_str())?;
        (rest.is_empty() || rest.starts_with('/')).then_some(rest)
    }

    /// The route's path on the gateway, without a trailing `/` (`""` for a route at `/`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Where the upstream publishes its protected resource metadata (RFC 9728: the
    /// well-known prefix between its origin and its path).
    pub fn upstream_metadata_uri(&self) -> Result<http::Uri, http::uri::InvalidUri> {
        format!(
            "{}{}{}",
            self.upstream_origin,
            oauth::METADATA_PREFIX,
            self.upstream_path_trimmed
        )
        .parse()
    }

    /// How this route maps URIs its upstream announces.
    pub fn endpoint_map(&self) -> EndpointMap {
        EndpointMap {
            prefix: self.prefix.clone(),
            upstream_base: format!("{}{}", self.upstream_origin, self.upstream_path),
            upstream_path_trimmed: self.upstream_path_trimmed.clone(),
        }
    }

    /// [`Route::upstream_uri`], parsed (without parsing for the prefix itself).
    pub fn upstream_target(
        &self,
        rest: &str,
        query: Option<&str>,
    ) -> Result<http::Uri, http::uri::InvalidUri> {
        if rest.is_empty() && query.is_none() {
            return Ok(self.base_uri.clone());
        }
        self.upstream_uri(rest, query).parse()
    }

    /// The upstream URI for a request to `<prefix><rest>?<query>`.
    pub fn upstream_uri(&self, rest: &str, query: Option<&str>) -> String {
        let mut uri = String::with_capacity(
            self.upstream_origin.len() + self.upstream_path.len() + rest.len() + 64,
        );
        uri.push_str(&self.upstream_origin);
        if rest.is_empty() {
            uri.push_str(&self.upstream_path);
        } else {
            uri.push_str(&self.upstream_path_trimmed);
            uri.push_str(rest);
        }
        if let Some(q) = query {
            uri.push('?');
            uri.push_str(q);
        }
        uri
    }
}

/// Maps URIs an upstream announces (the HTTP+SSE transport's `endpoint` event) to gateway
/// paths of the same route, so clients keep talking through the gateway.
#[derive(Clone)]
pub struct EndpointMap {
    prefix: String,
    upstream_base: String,
    upstream_path_trimmed: String,
}

impl EndpointMap {
    /// For an announced endpoint (absolute path or URL, relative to the upstream): the gateway
    /// path to announce instead, and the absolute upstream URL it stands for. `None` when the
    /// endpoint is on another origin or outside this route's upstream path.
    pub fn map(&self, announced: &str) -> Option<(String, String)> {
        let base = url::Url::parse(&self.upstream_base).ok()?;
        let target = base.join(announced).ok()?;
        if target.origin() != base.origin() {
            return None;
        }
        let rest = target
            .path()
            .strip_prefix(self.upstream_path_trimmed.as_str())?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        let mut gateway = format!("{}{rest}", self.prefix);
        if gateway.is_empty() {
            gateway.push('/');
        }
        if let Some(q) = target.query() {
            gateway.push('?');
            gateway.push_str(q);
        }
        Some((gateway, target.to_string()))
    }
}

/// A worker's routes, longest prefix first.
pub type RouteTable = Vec<Arc<Route>>;

/// What a new route table changes, for the reload report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RouteChanges {
    /// Routes added, removed, renamed, moved to another path or upstream.
    pub routes: bool,
    /// A CA bundle of an `https` upstream has other contents.
    pub upstream_tls: bool,
}

/// Everything the request path needs, shared by all connections.
pub struct Gateway {
    /// The routes; a reload swaps in a new table (requests in flight keep the route they
    /// started with).
    routes: arc_swap::ArcSwap<RouteTable>,
    pub settings: Settings,
    pub metrics: Metrics,
    pub enforcer: Arc<Enforcer>,
    /// Bytes all workers may hold in whole-body buffers (shared by every worker's gateway).
    pub budget: read::BufferBudget,
    /// Who is calling (shared by every worker's gateway).
    pub identity: Arc<crate::identity::Identity>,
    /// OpenTelemetry export, when configured (shared by every worker's gateway).
    pub telemetry: Option<Arc<crate::telemetry::Telemetry>>,
}

impl Gateway {
    pub fn new(
        settings: Settings,
        metrics: Metrics,
        enforcer: Arc<Enforcer>,
        budget: read::BufferBudget,
        identity: Arc<crate::identity::Identity>,
        telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    ) -> anyhow::Result<Arc<Self>> {
        let mut routes = settings
            .routes
            .iter()
            .map(|r| Route::new(r, &settings, &metrics).map(Arc::new))
            .collect::<anyhow::Result<RouteTable>>()?;
        routes.sort_by_key(|r| std::cmp::Reverse(r.prefix.len()));
        Ok(Arc::new(Self {
            routes: arc_swap::ArcSwap::from_pointee(routes),
            settings,
            metrics,
            enforcer,
            budget,
            identity,
            telemetry,
        }))
    }

    /// A worker's housekeeping, once a second until `shutdown`: idle upstream connections past
    /// their timeout are closed.
    ///
    /// The ticking also keeps the worker's timer wheel primed: tokio wakes a parked event loop
    /// (an `eventfd` write and an extra `epoll_wait` return) whenever a timer is registered that
    /// expires before everything already in the wheel, which, on an otherwise idle worker, is
    /// every request's upstream and header timeouts. With a timer due within a second, the
    /// per-request ones (seconds to minutes) never are.
    pub async fn housekeeping(self: Arc<Self>, mut shutdown: crate::shutdown::Shutdown) {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    for route in self.routes.load().iter() {
                        route.upstream.prune_idle();
                    }
                }
                () = shutdown.wait() => return,
            }
        }
    }

    /// The route serving `path` and the rest of the path after its prefix.
    pub fn route<'p>(&self, path: &'p str) -> Option<(Arc<Route>, &'p str)> {
        self.routes
            .load()
            .iter()
            .find_map(|r| r.rest(path).map(|rest| (r.clone(), rest)))
    }

    /// The MCP route mounted exactly at `path` (`/` for a route at the root).
    pub fn mcp_route_at(&self, path: &str) -> Option<Arc<Route>> {
        let wanted = path.trim_end_matches('/');
        self.routes
            .load()
            .iter()
            .find(|r| r.protocol == RouteProtocol::Mcp && r.prefix == wanted)
            .cloned()
    }

    /// Builds the route table `routes` describe, without serving it: an unchanged plain-text
    /// route is kept (with its idle connections); an `https` one is rebuilt, so its trust
    /// roots (system roots and `ca_file`) are read again. Upstream timeouts stay those the
    /// gateway started with. Fails, changing nothing, when any route cannot be built.
    pub fn prepare_routes(
        &self,
        routes: &[RouteSettings],
    ) -> anyhow::Result<(RouteTable, RouteChanges)> {
        let current = self.routes.load();
        let mut changes = RouteChanges::default();
        let mut table = RouteTable::with_capacity(routes.len());
        for settings in routes {
            let source = RouteSource::read(settings);
            let same = current.iter().find(|r| r.source == source);
            match same {
                Some(route) if !source.is_https() => table.push(route.clone()),
                _ => {
                    let before = current.iter().find(|r| {
                        r.source.name == source.name
                            && r.source.path == source.path
                            && r.source.upstream == source.upstream
                    });
                    match before {
                        None => changes.routes = true,
                        Some(b) if b.source.ca_pem != source.ca_pem => changes.upstream_tls = true,
                        Some(_) => {}
                    }
                    let route = Route::from_source(source, settings, &self.settings, &self.metrics)
                        .map_err(|e| anyhow::anyhow!("route `{}`: {e:#}", settings.name))?;
                    table.push(Arc::new(route));
                }
            }
        }
        if table.len() != current.len() {
            changes.routes = true;
        }
        table.sort_by_key(|r| std::cmp::Reverse(r.prefix.len()));
        Ok((table, changes))
    }

    /// Serves `table` from the next request on.
    pub fn install_routes(&self, table: RouteTable) {
        self.routes.store(Arc::new(table));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(routes: &[(&str, &str, &str)]) -> Arc<Gateway> {
        let mut yaml = String::from("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n");
        for (name, path, upstream) in routes {
            yaml.push_str(&format!(
                "  - {{ name: {name}, path: \"{path}\", upstream: \"{upstream}\" }}\n"
            ));
        }
        let settings = Settings::from_yaml(&yaml, std::path::Path::new(".")).unwrap();
        let metrics = Metrics::new();
        let enforcer = crate::start::enforcer_for(
            &settings,
            &metrics,
            crate::audit::sink::AuditSink::memory(metrics.audit_events_dropped.clone()).0,
        )
        .unwrap();
        let budget = read::BufferBudget::new(settings.limits.request_buffer_budget.as_u64());
        Gateway::new(
            settings.clone(),
            metrics,
            enforcer,
            budget,
            Arc::new(crate::identity::Identity::new(&settings.identity).unwrap()),
            None,
        )
        .unwrap()
    }

    #[test]
    fn prefix_matches_on_segment_boundary_and_longest_wins() {
        let gw = gateway(&[
            ("a", "/mcp", "http://127.0.0.1:1/mcp"),
            ("b", "/mcp/admin", "http://127.0.0.1:2/"),
        ]);
        assert_eq!(
            gw.route("/mcp").map(|(r, rest)| (r.name.to_string(), rest)),
            Some(("a".to_string(), ""))
        );
        assert_eq!(
            gw.route("/mcp/x")
                .map(|(r, rest)| (r.name.to_string(), rest)),
            Some(("a".to_string(), "/x"))
        );
        assert_eq!(
            gw.route("/mcp/admin/y").map(|(r, _)| r.name.to_string()),
            Some("b".to_string())
        );
        assert!(gw.route("/mcpx").is_none());
        assert!(gw.route("/").is_none());
    }

    #[test]
    fn announced_endpoints_map_back_through_the_route() {
        let gw = gateway(&[("legacy", "/legacy", "http://127.0.0.1:7/")]);
        let (route, _) = gw.route("/legacy/sse").unwrap();
        let map = route.endpoint_map();
        assert_eq!(
            map.map("/messages?sessionId=abc"),
            Some((
                "/legacy/messages?sessionId=abc".into(),
                "http://127.0.0.1:7/messages?sessionId=abc".into()
            ))
        );
        assert_eq!(
            map.map("http://127.0.0.1:7/messages?sessionId=abc")
                .map(|m| m.0),
            Some("/legacy/messages?sessionId=abc".into())
        );
        assert_eq!(map.map("http://evil.example/messages"), None);
        let gw = gateway(&[("m", "/mcp", "http://127.0.0.1:7/mcp")]);
        let (route, _) = gw.route("/mcp").unwrap();
        assert_eq!(route.endpoint_map().map("/other/messages"), None);
    }

    #[test]
    fn upstream_uri_joins_rest_and_query() {
        let gw = gateway(&[
            ("a", "/mcp/", "http://127.0.0.1:1/base/"),
            ("r", "/", "http://h:2"),
        ]);
        let (route, rest) = gw.route("/mcp/messages").unwrap();
        assert_eq!(
            route.upstream_uri(rest, Some("sessionId=1")),
            "http://127.0.0.1:1/base/messages?sessionId=1"
        );
        let (route, rest) = gw.route("/mcp").unwrap();
        assert_eq!(route.upstream_uri(rest, None), "http://127.0.0.1:1/base/");
        assert_eq!(
            route.upstream_target(rest, None).unwrap(),
            "http://127.0.0.1:1/base/"
        );
        assert_eq!(
            route.upstream_target(rest, Some("a=1")).unwrap(),
            "http://127.0.0.1:1/base/?a=1"
        );
        let (route, rest) = gw.route("/other").unwrap();
        assert_eq!(&*route.name, "r");
        assert_eq!(route.upstream_uri(rest, None), "http://h:2/other");
        let (_, rest) = gw.route("/").unwrap();
        assert_eq!(route.upstream_uri(rest, None), "http://h:2/");
    }
}
