//! Keep-alive client connections behind a Kubernetes Service.
//!
//! Established TCP connections are not cut when an endpoint leaves: kube-proxy picks a pod
//! per connection (iptables `statistic mode random`) and conntrack keeps the connection on
//! it. A client's requests keep going to its pod until the connection ends: its lifetime is
//! up, the server closed it (the process stopped listening or exited), a connect was
//! refused, or the server answered `Connection: close` while its readiness failed.

use super::effects::Effects;
use super::queue::Event;
use crate::scenario::KeepAlive;
use crate::time::Millis;
use std::collections::BTreeSet;

/// One client connection.
#[derive(Debug, Clone, Copy)]
struct Connection {
    /// The pod it is pinned to; `None` while kube-proxy has no endpoint to send it to.
    pod: Option<usize>,
    /// Whether the pod accepted it (a refused connect carries one failed request).
    established: bool,
    /// When it ends unless the server closes it first.
    ends_at: Millis,
    epoch: u32,
}

/// The clients' connections, the pods they are pinned to, and the members kube-proxy picks
/// from.
#[derive(Debug)]
pub(super) struct Connections {
    settings: KeepAlive,
    connections: Vec<Connection>,
    /// Connections pinned to each pod, established or not.
    pinned: Vec<u32>,
    /// Established connections on each pod, by index.
    established: Vec<BTreeSet<u32>>,
    /// The members of rotation, to pick the k-th in pod order.
    members: Fenwick,
    rng: fastrand::Rng,
}

impl Connections {
    /// No connection yet, for `pods` pods.
    pub(super) fn new(settings: KeepAlive, pods: usize, seed: u64) -> Self {
        Connections {
            settings,
            connections: Vec::new(),
            pinned: vec![0; pods],
            established: vec![BTreeSet::new(); pods],
            members: Fenwick::new(pods),
            // Its own stream, so connection choices leave every other draw as it is.
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// Client connections in all.
    pub(super) fn clients(&self) -> u32 {
        self.settings.clients
    }

    /// Connections pinned to `pod`.
    pub(super) fn pinned(&self, pod: usize) -> u32 {
        self.pinned[pod]
    }

    /// `pod` joined or left rotation.
    pub(super) fn set_member(&mut self, pod: usize, member: bool) {
        self.members.set(pod, member);
    }

    fn pin(&mut self, connection: usize, pod: Option<usize>, established: bool) {
        let old = self.connections[connection];
        if let Some(previous) = old.pod {
            self.pinned[previous] -= 1;
            if old.established {
                self.established[previous].remove(&(connection as u32));
            }
        }
        if let Some(pod) = pod {
            self.pinned[pod] += 1;
            if established {
                self.established[pod].insert(connection as u32);
            }
        }
        let entry = &mut self.connections[connection];
        entry.pod = pod;
        entry.established = established;
    }
}

/// What kube-proxy finds of a pod it sends a connection to: whether the pod accepts it, and
/// whether its server closes it after one request (`Connection: close` while unready).
#[derive(Debug, Clone, Copy)]
pub(super) struct Reception {
    pub(super) accepts: bool,
    pub(super) closes: bool,
}

impl Connections {
    /// The clients' connections at the start: spread evenly over the pods in rotation, at
    /// ages spread evenly over their lifetime (a cold fleet has none in rotation: each client
    /// tries again at its next request). `rate` is the fleet's requests per second.
    pub(super) fn open(&mut self, rate: f64, effects: &mut Effects) {
        let settings = self.settings;
        let gap = settings.request_gap(rate);
        let members = self.members.count();
        for index in 0..settings.clients as usize {
            let (pod, ends_at) = if members == 0 {
                (None, 1 + self.rng.u64(0..gap))
            } else {
                let pod = self.members.select(index % members);
                (Some(pod), 1 + self.rng.u64(0..settings.connection_lifetime))
            };
            self.connections.push(Connection {
                pod: None,
                established: false,
                ends_at,
                epoch: 0,
            });
            self.pin(index, pod, pod.is_some());
            effects.schedule(
                ends_at,
                Event::ConnectionEnd {
                    connection: index as u32,
                    epoch: 0,
                },
            );
        }
        // Every pod's weight may have changed.
        effects.all_reweighed();
    }

    /// A connection's end of `epoch` arrives: the client connects again if it is current.
    pub(super) fn end(
        &mut self,
        connection: usize,
        epoch: u32,
        (now, rate): (Millis, f64),
        reception: &impl Fn(usize) -> Reception,
        effects: &mut Effects,
    ) {
        if self.connections[connection].epoch == epoch {
            self.reconnect(connection, (now, rate), reception, effects);
        }
    }

    /// The client connects again for its next request: kube-proxy picks one of the pods in
    /// rotation at random. A refused connect, or an answer with `Connection: close`, ends it
    /// after that one request.
    fn reconnect(
        &mut self,
        connection: usize,
        (now, rate): (Millis, f64),
        reception: &impl Fn(usize) -> Reception,
        effects: &mut Effects,
    ) {
        let settings = self.settings;
        let gap = settings.request_gap(rate);
        let members = self.members.count();
        let (pod, established, ends_at) = if members == 0 {
            // REJECT: connection refused; the client tries again at its next request.
            (None, false, now + gap)
        } else {
            let pod = self.members.select(self.rng.usize(0..members));
            let found = reception(pod);
            if !found.accepts {
                (Some(pod), false, now + gap)
            } else if found.closes {
                (Some(pod), true, now + gap)
            } else {
                (Some(pod), true, now + settings.connection_lifetime)
            }
        };
        let previous = self.connections[connection].pod;
        self.pin(connection, pod, established);
        let entry = &mut self.connections[connection];
        entry.ends_at = ends_at;
        entry.epoch += 1;
        let epoch = entry.epoch;
        effects.schedule(
            ends_at,
            Event::ConnectionEnd {
                connection: connection as u32,
                epoch,
            },
        );
        for pod in [previous, pod].into_iter().flatten() {
            effects.reweighed(pod);
        }
        effects.resplit();
    }

    /// `pod`'s process stopped listening or exited: the connections established to it are
    /// closed and their clients connect again.
    pub(super) fn server_closed(
        &mut self,
        pod: usize,
        (now, rate): (Millis, f64),
        reception: &impl Fn(usize) -> Reception,
        effects: &mut Effects,
    ) {
        let closed: Vec<u32> = self.established[pod].iter().copied().collect();
        for connection in closed {
            self.reconnect(connection as usize, (now, rate), reception, effects);
        }
    }

    /// `pod`'s readiness answers started failing and its server closes connections while
    /// unready: each client pinned to it leaves after its next request there (a uniformly
    /// spread time within one request gap).
    pub(super) fn readiness_fell(
        &mut self,
        pod: usize,
        (now, rate): (Millis, f64),
        effects: &mut Effects,
    ) {
        let gap = self.settings.request_gap(rate);
        let on_pod: Vec<u32> = self.established[pod].iter().copied().collect();
        for connection in on_pod {
            let leaves_at = now + 1 + self.rng.u64(0..gap);
            let entry = &mut self.connections[connection as usize];
            if leaves_at < entry.ends_at {
                entry.ends_at = leaves_at;
                entry.epoch += 1;
                let epoch = entry.epoch;
                effects.schedule(leaves_at, Event::ConnectionEnd { connection, epoch });
            }
        }
    }
}

/// A Fenwick tree over membership bits: how many members, and the k-th in pod order, in
/// O(log n).
#[derive(Debug)]
pub(super) struct Fenwick {
    tree: Vec<u32>,
    bits: Vec<bool>,
}

impl Fenwick {
    fn new(size: usize) -> Self {
        Fenwick {
            tree: vec![0; size + 1],
            bits: vec![false; size],
        }
    }

    fn set(&mut self, index: usize, value: bool) {
        if self.bits[index] == value {
            return;
        }
        self.bits[index] = value;
        let mut position = index + 1;
        while position < self.tree.len() {
            if value {
                self.tree[position] += 1;
            } else {
                self.tree[position] -= 1;
            }
            position += position & position.wrapping_neg();
        }
    }

    fn count(&self) -> usize {
        let mut total = 0;
        let mut position = self.bits.len();
        while position > 0 {
            total += self.tree[position] as usize;
            position -= position & position.wrapping_neg();
        }
        total
    }

    /// The index of the k-th (0-based) set bit.
    fn select(&self, rank: usize) -> usize {
        let mut position = 0;
        let mut remaining = rank as u32;
        let mut step = self.tree.len().next_power_of_two();
        while step > 0 {
            let next = position + step;
            if next < self.tree.len() && self.tree[next] <= remaining {
                position = next;
                remaining -= self.tree[next];
            }
            step /= 2;
        }
        position
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenwick_selects_the_kth_member_in_order() {
        let mut members = Fenwick::new(10);
        for index in [1, 3, 4, 8] {
            members.set(index, true);
        }
        assert_eq!(members.count(), 4);
        let picked: Vec<usize> = (0..4).map(|rank| members.select(rank)).collect();
        assert_eq!(picked, [1, 3, 4, 8]);
        members.set(3, false);
        members.set(0, true);
        let picked: Vec<usize> = (0..members.count())
            .map(|rank| members.select(rank))
            .collect();
        assert_eq!(picked, [0, 1, 4, 8]);
    }
}
