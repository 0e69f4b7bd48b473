//! A link from this run's broker to the broker of a run on another machine, over LLMP's
//! broker-to-broker TCP protocol.
//!
//! The remote broker sees an ordinary LibAFL broker-to-broker peer: it forwards everything its
//! clients broadcast to us and everything we send to its clients. On this side the link is an
//! ordinary LLMP client of our own broker, so it gets a client id from the broker's listener like
//! every other client.
//!
//! Why not `LlmpBrokerInner::connect_b2b`: in LibAFL 0.16.1 it gives the link the id the listener
//! also hands to the first local client (`peek_next_client_id` against the listener's own
//! counter). Local clients then drop the remote inputs as their own messages, and the link drops
//! the local ones as messages it sent itself, so nothing crosses.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

use libafl::Error;
use libafl_bolts::llmp::{
    send_tcp_msg, Flags, LlmpClient, Tag, TcpRequest, TcpResponse, LLMP_FLAG_FROM_B2B,
};
use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
use libafl_bolts::ClientId;
use serde::{Deserialize, Serialize};

/// One broadcast message on the wire, laid out as LLMP's own `TcpRemoteNewMessage` (whose
/// fields are private).
#[derive(Serialize, Deserialize)]
struct RemoteMessage {
    /// The sender on the broker it comes from.
    client_id: ClientId,
    /// The LLMP tag (LibAFL events, or ours).
    tag: Tag,
    /// LLMP flags (compression, broker-to-broker).
    flags: Flags,
    /// The message itself.
    payload: Vec<u8>,
}

/// How long connecting to a remote broker may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the remote broker may take to answer each handshake message.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the link sleeps when neither side sent anything.
const IDLE_SLEEP: Duration = Duration::from_millis(5);

/// Largest message accepted from the remote broker: more is a broken or foreign peer.
const MAX_MESSAGE: usize = 256 << 20;

/// Connects to the broker at `remote` and, in a background thread, to our own broker on
/// `local_port`; from then on the thread passes broadcast messages both ways until either side
/// goes away. Returns once both connections are made.
pub(crate) fn connect(remote: &str, local_port: u16) -> Result<(), Error> {
    let address = remote
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| Error::illegal_state(format!("{remote} has no address")))?;
    let mut stream = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT)?;
    stream.set_nodelay(true)?;
    // A peer that is not an LLMP broker, or one busy with another connection, must not hold
    // the run: the handshake has a deadline, the exchange after it none.
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    match TcpResponse::try_from(read_frame(&mut stream)?)? {
        TcpResponse::BrokerConnectHello { .. } => {}
        other => return Err(unexpected(remote, &other)),
    }
    let hostname = std::env::var("HOSTNAME").unwrap_or_else(|_| "labelfuzz".to_string());
    send_tcp_msg(&mut stream, &TcpRequest::RemoteBrokerHello { hostname })?;
    match TcpResponse::try_from(read_frame(&mut stream)?)? {
        TcpResponse::RemoteBrokerAccepted { .. } => {}
        other => return Err(unexpected(remote, &other)),
    }

    stream.set_read_timeout(None)?;
    let incoming = spawn_reader(stream.try_clone()?);
    let peer = remote.to_string();
    // The LLMP client lives in the link's thread (it is not `Send`); the thread reports whether
    // it could attach to our broker.
    let (attached_tx, attached_rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("labelfuzz-link".into())
        .spawn(move || {
            let attached = StdShMemProvider::new()
                .and_then(|provider| LlmpClient::create_attach_to_tcp(provider, local_port));
            match attached {
                Ok(client) => {
                    let _ = attached_tx.send(Ok(()));
                    let ended = pass_messages(client, &mut stream, &incoming);
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    eprintln!(
                        "labelfuzz: warning: the link to the broker at {peer} ended ({ended}); \
                         this run goes on alone"
                    );
                }
                Err(e) => {
                    let _ = attached_tx.send(Err(e));
                }
            }
        })?;
    attached_rx
        .recv()
        .map_err(|_| Error::unknown("the broker link thread ended before attaching"))?
}

fn unexpected(remote: &str, response: &TcpResponse) -> Error {
    Error::illegal_state(format!(
        "{remote} is not an LLMP broker accepting broker links (it answered {response:?})"
    ))
}

/// Reads one length-prefixed frame as LLMP's TCP messages are sent (a big-endian `u32` length,
/// then the bytes), failing instead of panicking when the peer goes away mid-frame.
fn read_frame(stream: &mut TcpStream) -> Result<Vec<u8>, Error> {
    let mut length = [0_u8; 4];
    stream.read_exact(&mut length)?;
    let length = u32::from_be_bytes(length) as usize;
    if length > MAX_MESSAGE {
        return Err(Error::illegal_state(format!(
            "a broker sent a {length}-byte message"
        )));
    }
    let mut bytes = vec![0; length];
    stream.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Reads messages from the remote broker into a channel until it disconnects.
fn spawn_reader(mut stream: TcpStream) -> Receiver<RemoteMessage> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(frame) = read_frame(&mut stream) {
            let Ok(message) = postcard::from_bytes::<RemoteMessage>(&frame) else {
                break;
            };
            if tx.send(message).is_err() {
                break;
            }
        }
    });
    rx
}

/// Forwards what our broker broadcasts to the remote broker, and what the remote broker sends
/// into our broker, until either side is gone; returns why it stopped.
fn pass_messages<SHM, SP>(
    mut local: LlmpClient<SHM, SP>,
    remote: &mut TcpStream,
    incoming: &Receiver<RemoteMessage>,
) -> String
where
    SHM: libafl_bolts::shmem::ShMem,
    SP: ShMemProvider<ShMem = SHM>,
{
    let own_id = local.sender().id();
    loop {
        let mut idle = true;
        loop {
            let outgoing = match local.recv_buf_with_flags() {
                Ok(Some((sender, tag, flags, payload))) => {
                    // What we injected comes back in the broadcast: it is the remote's own.
                    if sender == own_id {
                        continue;
                    }
                    RemoteMessage {
                        client_id: sender,
                        tag,
                        flags,
                        payload: payload.to_vec(),
                    }
                }
                Ok(None) => break,
                Err(e) => return format!("this run's broker: {e}"),
            };
            idle = false;
            if let Err(e) = send_tcp_msg(remote, &outgoing) {
                return format!("sending: {e}");
            }
            if let Err(e) = remote.flush() {
                return format!("sending: {e}");
            }
        }
        loop {
            match incoming.try_recv() {
                Ok(message) => {
                    idle = false;
                    let flags = Flags(message.flags.0 | LLMP_FLAG_FROM_B2B.0);
                    if let Err(e) = local.send_buf_with_flags(message.tag, flags, &message.payload)
                    {
                        return format!("this run's broker: {e}");
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return "the remote broker went away".into(),
            }
        }
        if idle {
            std::thread::sleep(IDLE_SLEEP);
        }
    }
}
