//! A dependency's address inside a URL: where it points, and the same URL pointed elsewhere
//! (at the fault proxy the drill puts in front of it), user, password and database kept.

use std::net::SocketAddr;

/// Rewrites the host and port of a `postgres://` URL to `address`, keeping user, password,
/// database and parameters.
pub fn redirect_url(url: &str, address: SocketAddr) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let userinfo = authority
        .rfind('@')
        .map(|at| &authority[..=at])
        .unwrap_or("");
    Some(format!("{scheme}://{userinfo}{address}{tail}"))
}

/// The host and port a `postgres://` or `amqp://` URL points at (the scheme's port when
/// absent: 5432, 5672, 5671 for `amqps`).
pub fn url_target(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme {
        "amqp" => 5672,
        "amqps" => 5671,
        _ => 5432,
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port.is_empty() {
        return None;
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
            Some((host.trim_matches(['[', ']']).to_owned(), port.parse().ok()?))
        }
        _ => Some((host_port.trim_matches(['[', ']']).to_owned(), default_port)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_database_urls() {
        let address: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert_eq!(
            redirect_url(
                "postgres://app:pw@db.internal:5432/orders?sslmode=disable",
                address
            )
            .as_deref(),
            Some("postgres://app:pw@127.0.0.1:40001/orders?sslmode=disable")
        );
        assert_eq!(
            redirect_url("postgres://localhost/test", address).as_deref(),
            Some("postgres://127.0.0.1:40001/test")
        );
        assert_eq!(redirect_url("not a url", address), None);
    }

    #[test]
    fn reads_url_targets() {
        assert_eq!(
            url_target("postgres://u:p@127.0.0.1:5433/test"),
            Some(("127.0.0.1".into(), 5433))
        );
        assert_eq!(
            url_target("postgres://localhost/test"),
            Some(("localhost".into(), 5432))
        );
        assert_eq!(url_target("postgres:///test"), None);
        assert_eq!(url_target("postgres://h:notaport/x"), None);
    }
}
