//! `configmap-mirror probe URL`: one HTTP/1.1 GET, for checks run from the
//! image itself, which has no shell and no curl (the chart's `helm test`
//! Pod asks `/readyz` through the Service with it). Exit 0 on a 2xx answer;
//! otherwise one line saying why on stderr, and exit 1.

use std::{
    fmt,
    net::{IpAddr, SocketAddr},
    process::ExitCode,
    time::Duration,
};

use bytes::Bytes;
use http::{Request, Uri, header};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::ops::duration;

/// The most of an answer's body read, for the reason it gives.
const BODY_LIMIT: usize = 4096;
/// The most of that reason printed.
const REASON_CHARS: usize = 200;

#[derive(Debug, Clone, clap::Args)]
pub struct ProbeArgs {
    /// The URL to GET: `http://HOST[:PORT][/PATH]`, where HOST is a name, an
    /// IPv4 address or an IPv6 address in brackets (`http://[::1]:8080/readyz`).
    #[arg(value_name = "URL", value_parser = Target::parse)]
    pub url: Target,

    /// Connect to this IP address instead of resolving the URL's host, which
    /// still names the host in the request: for a Service's address from its
    /// environment variable (`$(NAME_SERVICE_HOST)`) where no cluster DNS
    /// answers. IPv6 without brackets.
    #[arg(long, value_name = "IP")]
    pub address: Option<IpAddr>,

    /// Longest time for the whole exchange: resolving, connecting and the
    /// answer.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration::parse_positive)]
    pub timeout: Duration,
}

/// An `http://` URL, split into what a GET needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    url: String,
    host: Host,
    port: u16,
    /// The Host header: the URL's authority.
    authority: String,
    path_and_query: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Ip(IpAddr),
    Name(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, String> {
        if !url.contains("://") {
            return Err("not an http:// URL".into());
        }
        let uri: Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => return Err(format!("only http:// is supported, not {other}://")),
            None => return Err("not an http:// URL".into()),
        }
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .ok_or("no host")?;
        if authority.contains('@') {
            return Err("user information (user@) is not supported".into());
        }
        let (host, port) = split_authority(&authority)?;
        let path_and_query = uri
            .path_and_query()
            .map(|p| p.as_str())
            .filter(|p| !p.is_empty())
            .unwrap_or("/")
            .to_owned();
        Ok(Target {
            url: url.to_owned(),
            host,
            port,
            authority,
            path_and_query,
        })
    }
}

/// `host[:port]` or `[v6][:port]`; the port defaults to 80.
fn split_authority(authority: &str) -> Result<(Host, u16), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address without its closing bracket")?;
        let ip: std::net::Ipv6Addr = inside
            .parse()
            .map_err(|_| format!("{inside:?} is not an IPv6 address"))?;
        (Host::Ip(IpAddr::V6(ip)), after)
    } else {
        let end = authority.find(':').unwrap_or(authority.len());
        let (name, after) = authority.split_at(end);
        let host = match name.parse::<std::net::Ipv4Addr>() {
            Ok(ip) => Host::Ip(IpAddr::V4(ip)),
            Err(_) if is_host_name(name) => Host::Name(name.to_owned()),
            Err(_) => {
                return Err(format!(
                    "{name:?} is not a host name nor an IP address (IPv6 goes in brackets)"
                ));
            }
        };
        (host, after)
    };
    let port = match port {
        "" => 80,
        _ => port
            .strip_prefix(':')
            .and_then(|p| p.parse::<u16>().ok())
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("{port:?} is not a port (1 to 65535)"))?,
    };
    Ok((host, port))
}

fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Runs the probe: its own small runtime, one line of output.
pub fn run(args: &ProbeArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("GET {}: cannot start: {e}", args.url);
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(probe(args)) {
        Ok(answer) => {
            println!("GET {}: {answer}", args.url);
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("GET {}: {why}", args.url);
            ExitCode::FAILURE
        }
    }
}

/// The answer's status (and reason, from its body), as `Ok` for a 2xx and
/// `Err` for anything else, a failure to get one included.
async fn probe(args: &ProbeArgs) -> Result<String, String> {
    tokio::time::timeout(args.timeout, get(args))
        .await
        .map_err(|_| format!("no answer within {:?}", args.timeout))?
}

async fn get(args: &ProbeArgs) -> Result<String, String> {
    let target = &args.url;
    let addresses: Vec<SocketAddr> = match (args.address, &target.host) {
        (Some(ip), _) | (None, &Host::Ip(ip)) => vec![SocketAddr::new(ip, target.port)],
        (None, Host::Name(name)) => tokio::net::lookup_host((name.as_str(), target.port))
            .await
            .map_err(|e| format!("cannot resolve {name}: {e}"))?
            .collect(),
    };
    let stream = connect(&addresses).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    // The connection is driven beside the request; it ends with the answer.
    tokio::spawn(connection);
    let request = Request::get(target.path_and_query.as_str())
        .header(header::HOST, &target.authority)
        .header(
            header::USER_AGENT,
            concat!("configmap-mirror-probe/", env!("CARGO_PKG_VERSION")),
        )
        .header(header::CONNECTION, "close")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("cannot make the request: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("no answer: {e}"))?;
    let status = response.status();
    let reason = first_line(&read_some(response.into_body()).await);
    let mut answer = status.to_string();
    if !reason.is_empty() {
        answer = format!("{answer}: {reason}");
    }
    match status.is_success() {
        true => Ok(answer),
        false => Err(answer),
    }
}

/// The first address that accepts a connection, or why none did.
async fn connect(addresses: &[SocketAddr]) -> Result<TcpStream, String> {
    let mut failures = Vec::new();
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(e) => failures.push(format!("cannot connect to {address}: {e}")),
        }
    }
    match failures.is_empty() {
        true => Err("the host has no address".into()),
        false => Err(failures.join("; ")),
    }
}

/// Up to [`BODY_LIMIT`] bytes of a body; what came before an error.
async fn read_some(mut body: hyper::body::Incoming) -> Vec<u8> {
    let mut read = Vec::new();
    while read.len() < BODY_LIMIT {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    read.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    read.truncate(BODY_LIMIT);
    read
}

/// The body's first non-empty line, cut short and with control characters
/// replaced: what a server says about its answer, on one line.
fn first_line(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut shown: String = line
        .chars()
        .take(REASON_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() > REASON_CHARS {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> (Host, u16, String, String) {
        let target = Target::parse(url).unwrap();
        (
            target.host,
            target.port,
            target.authority,
            target.path_and_query,
        )
    }

    #[test]
    fn urls_with_ipv4_ipv6_and_names() {
        assert_eq!(
            parsed("http://10.0.0.7:8080/readyz"),
            (
                Host::Ip("10.0.0.7".parse().unwrap()),
                8080,
                "10.0.0.7:8080".into(),
                "/readyz".into()
            )
        );
        assert_eq!(
            parsed("http://[fd00::1]:8080/readyz?verbose=1"),
            (
                Host::Ip("fd00::1".parse().unwrap()),
                8080,
                "[fd00::1]:8080".into(),
                "/readyz?verbose=1".into()
            )
        );
        assert_eq!(
            parsed("http://configmap-mirror.team-a.svc"),
            (
                Host::Name("configmap-mirror.team-a.svc".into()),
                80,
                "configmap-mirror.team-a.svc".into(),
                "/".into()
            )
        );
        assert_eq!(parsed("http://[::1]/x").1, 80);
    }

    #[test]
    fn what_is_not_an_http_url_is_refused_saying_why() {
        for (url, why) in [
            ("https://example.com/", "only http"),
            ("example.com:8080/readyz", "not an http:// URL"),
            ("/readyz", "not an http:// URL"),
            ("http://fd00::1:8080/readyz", "not a URL"),
            ("http://[fd00::1:8080/readyz", "not a URL"),
            ("http://[not-v6]:80/", "not an IPv6 address"),
            ("http://host:0/", "not a port"),
            ("http://host:99999/", "not a port"),
            ("http://user@host/", "user information"),
            ("http://ho_st/", "not a host name"),
        ] {
            let error = Target::parse(url).unwrap_err();
            assert!(error.contains(why), "{url}: {error}");
        }
    }

    #[test]
    fn the_reason_is_one_short_line() {
        assert_eq!(
            first_line(b"\n  not ready: caches syncing\nmore"),
            "not ready: caches syncing"
        );
        assert_eq!(first_line(b"a\tb"), "a b");
        let long = "x".repeat(500);
        assert_eq!(
            first_line(long.as_bytes()).chars().count(),
            REASON_CHARS + 1
        );
        assert_eq!(first_line(b""), "");
    }
}
