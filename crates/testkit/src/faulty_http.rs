//! Servers that misbehave for real, on loopback: an HTTP server answering each
//! GET as the test's script says (a HEAD gets 405) (an HTML page with 200, a body cut off
//! with no Content-Length, the whole file), and a listener that accepts
//! connections and never says a word.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server sends for one request.
pub enum Reply {
    /// 200 with Content-Length and the bytes.
    Whole(Vec<u8>),
    /// 200 with an HTML page, as a captive portal or a misconfigured proxy sends.
    Html,
    /// 200 without Content-Length: the first `keep` bytes, then the connection
    /// closes, which ends such a body early without any error on the wire.
    CutWithoutLength { body: Vec<u8>, keep: usize },
    NotFound,
}

type Script = dyn Fn(&str, usize) -> Reply + Send + Sync;

pub struct ScriptedHttp {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl ScriptedHttp {
    /// `script(path, n)` answers the `n`-th request (from 1) for `path` (without its `/`).
    pub fn start(script: impl Fn(&str, usize) -> Reply + Send + Sync + 'static) -> ScriptedHttp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let script: Arc<Script> = Arc::new(script);
        let (stop_flag, counter) = (stop.clone(), hits.clone());
        let thread = std::thread::spawn(move || {
            while !stop_flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (script, counter) = (script.clone(), counter.clone());
                        std::thread::spawn(move || serve(stream, &*script, &counter));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        ScriptedHttp { addr, stop, thread: Some(thread), hits }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Requests served so far for `path`.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

impl Drop for ScriptedHttp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(mut stream: TcpStream, script: &Script, hits: &Mutex<HashMap<String, usize>>) {
    stream.set_nonblocking(false).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head);
    // The script is of downloads: a HEAD (ghbench sizing hours before a load)
    // is refused as by a server that serves none, and not counted.
    if text.starts_with("HEAD ") {
        let _ = stream.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        let _ = stream.shutdown(std::net::Shutdown::Both);
        return;
    }
    let path = text.split_whitespace().nth(1).unwrap_or("/").trim_start_matches('/').to_string();
    let n = {
        let mut hits = hits.lock().unwrap();
        let n = hits.entry(path.clone()).or_default();
        *n += 1;
        *n
    };
    let response = match script(&path, n) {
        Reply::Whole(body) => [format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes(), body].concat(),
        Reply::Html => {
            let body = b"<!doctype html><html><body><h1>Welcome to the hotel wifi</h1></body></html>";
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            [head.into_bytes(), body.to_vec()].concat()
        }
        Reply::CutWithoutLength { body, keep } => {
            [b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec(), body[..keep.min(body.len())].to_vec()].concat()
        }
        Reply::NotFound => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    };
    let _ = stream.write_all(&response);
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// Accepts connections and keeps them open without ever answering, until dropped.
pub struct SilentListener {
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SilentListener {
    pub fn start() -> SilentListener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        SilentListener { port, stop, thread: Some(thread) }
    }
}

impl Drop for SilentListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
