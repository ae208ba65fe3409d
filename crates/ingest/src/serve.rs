//! Serves a folder of hour files over HTTP on loopback, the way data.gharchive.org
//! serves them, so the HTTP ingest path is exercised for real (tests,
//! `ghbench serve`). Only plain file names are served: no listings, no paths.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct StaticServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl StaticServer {
    /// Binds `addr` (port 0 picks a free port) and serves `dir` until dropped.
    pub fn start(dir: &Path, addr: &str) -> io::Result<StaticServer> {
        let server = Arc::new(tiny_http::Server::from_listener(listener(addr)?, None).map_err(io::Error::other)?);
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("server is not bound to an IP address"))?;
        let dir = dir.to_path_buf();
        let accept = server.clone();
        let thread = std::thread::spawn(move || {
            for request in accept.incoming_requests() {
                let dir = dir.clone();
                // One thread per request: ingest downloads several hours at once.
                std::thread::spawn(move || respond(&dir, request));
            }
        });
        Ok(StaticServer { server, addr, thread: Some(thread) })
    }

    /// Base URL, ending in `/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A listening socket whose connections send at once (TCP_NODELAY, which
/// Linux's accepted sockets inherit). tiny_http writes a response's head and
/// its body apart: with Nagle's algorithm on, the body of every response
/// after the first on a kept-alive connection waited for the client's
/// delayed ACK, 40 ms an hour (12.5 ms an hour of 20 events at 4 at once,
/// where 2.9 ms had been measured).
/// The first of `addr`'s addresses that can be listened on (`localhost` may
/// name `::1` first on a machine without IPv6), as `TcpListener::bind` does.
fn listener(addr: &str) -> io::Result<std::net::TcpListener> {
    use std::net::ToSocketAddrs;
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, format!("{addr} names no address"));
    for address in addr.to_socket_addrs()? {
        let listen = || -> io::Result<std::net::TcpListener> {
            let socket = socket2::Socket::new(socket2::Domain::for_address(address), socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
            socket.set_reuse_address(true)?;
            socket.set_tcp_nodelay(true)?;
            socket.bind(&address.into())?;
            socket.listen(128)?;
            Ok(socket.into())
        };
        match listen() {
            Ok(listener) => return Ok(listener),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn respond(dir: &Path, request: tiny_http::Request) {
    let name = request.url().trim_start_matches('/').to_string();
    let file = file_for(dir, &name).and_then(|path| std::fs::File::open(path).ok());
    let _ = match (request.method(), file) {
        // Content-Length always (tiny_http sends files above 32 KiB chunked,
        // without it), as a static server does; a HEAD gets the headers alone.
        (tiny_http::Method::Get | tiny_http::Method::Head, Some(file)) => request.respond(tiny_http::Response::from_file(file).with_chunked_threshold(usize::MAX)),
        (tiny_http::Method::Get | tiny_http::Method::Head, None) => request.respond(tiny_http::Response::empty(404)),
        _ => request.respond(tiny_http::Response::empty(405)),
    };
}

fn file_for(dir: &Path, name: &str) -> Option<PathBuf> {
    let plain = !name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.');
    plain.then(|| dir.join(name)).filter(|p| p.is_file())
}
