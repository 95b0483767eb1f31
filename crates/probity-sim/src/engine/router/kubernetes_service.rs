//! A ClusterIP Service through kube-proxy.
//!
//! kube-proxy routes to the endpoints the EndpointSlice controller marks ready, which follow
//! the pods' Ready condition after a propagation delay (`pkg/proxy/topology.go`
//! `CategorizeEndpoints`). With no ready endpoint it REJECTs: clients get a connection refused
//! at once (`pkg/proxy/iptables/proxier.go`, "has no endpoints"). Its serving-and-terminating
//! fallback applies to pods being deleted, which this model does not delete.

use super::Router;
use crate::engine::traffic::Split;
use crate::time::Millis;

/// kube-proxy in front of the pods.
#[derive(Debug)]
pub(crate) struct KubernetesService {
    propagation: Millis,
    ready: Vec<bool>,
}

impl KubernetesService {
    /// A Service over `pods` pods, none ready yet.
    pub(crate) fn new(pods: usize, propagation: Millis) -> Self {
        KubernetesService {
            propagation,
            ready: vec![false; pods],
        }
    }
}

impl Router for KubernetesService {
    fn name(&self) -> &'static str {
        "kubernetes-service"
    }

    fn healthy(&self, pod: usize) -> bool {
        self.ready[pod]
    }

    fn split(&self, members: usize, _pods: usize) -> Split {
        if members == 0 {
            Split::Refused
        } else {
            Split::Members
        }
    }

    fn propagation(&self) -> Option<Millis> {
        Some(self.propagation)
    }

    fn endpoint_update(&mut self, pod: usize, ready: bool) -> bool {
        let changed = self.ready[pod] != ready;
        self.ready[pod] = ready;
        changed
    }
}
