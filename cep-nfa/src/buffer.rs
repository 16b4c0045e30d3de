//! The shared match buffer: partial matches share their prefixes.
//!
//! Each binding of an event to a pattern element is a [`Node`] holding the
//! event's row and partition position, the element, and an edge to the node
//! it extends. A run holds only its last node; when runs split (a Kleene
//! take-or-proceed, an any-match take-or-ignore) both halves point at the
//! same node, so everything before the split is stored once.
//!
//! SASE+ and Flink's SharedBuffer key nodes by (event, state) and tag edges
//! with Dewey version numbers so that several runs can share one node and
//! still find their own path back. Here every node has exactly one outgoing
//! edge, so the path from a node to the root *is* its version: a run's
//! version is identified by its last node, and extraction follows parent
//! edges without comparing versions. Two runs that bind the same event to
//! the same element get two nodes (32 bytes each), where the versioned
//! scheme would store one node and two versioned edges.
//!
//! Nodes live in a [`slab::Slab`] and are reference-counted by runs, pending
//! matches and child nodes; a node is freed (and its parent released) when
//! its count drops to zero, iteratively, so a long Kleene chain cannot
//! overflow the stack.

use slab::Slab;

/// Index of a node; [`NIL`] is "no node".
pub type NodeId = u32;

/// The absent node (the parent of a first binding).
pub const NIL: NodeId = u32::MAX;

/// One binding of an event to an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Node {
    /// Input row of the event.
    pub row: u64,
    /// Position of the event in its partition.
    pub pos: u64,
    /// The node this one extends.
    pub parent: NodeId,
    /// References from runs, pending matches and children.
    refs: u32,
    /// Index of the positive element.
    pub elem: u16,
}

/// Slab-backed, reference-counted buffer of bindings.
///
/// # Examples
/// ```
/// use cep_nfa::buffer::{Buffer, NIL};
/// let mut b = Buffer::default();
/// let a = b.push(NIL, 0, 10, 0);          // a run binds row 10 to element 0
/// let x = b.push(a, 1, 11, 1);            // it splits: two runs extend `a`
/// let y = b.push(a, 1, 12, 1);
/// b.release(a);                           // the original run is gone
/// assert_eq!(b.len(), 3);
/// let mut path = Vec::new();
/// b.path(y, &mut path);
/// assert_eq!(path.iter().map(|n| n.row).collect::<Vec<_>>(), [10, 12]);
/// b.release(x);
/// b.release(y);
/// assert_eq!(b.len(), 0);
/// ```
#[derive(Debug, Default)]
pub struct Buffer {
    nodes: Slab<Node>,
}

impl Buffer {
    /// Adds a node extending `parent` (which gains a reference) and returns
    /// it with one reference, owned by the caller.
    pub fn push(&mut self, parent: NodeId, elem: u16, row: u64, pos: u64) -> NodeId {
        if parent != NIL {
            self.retain(parent);
        }
        let id = self.nodes.insert(Node { row, pos, parent, refs: 1, elem });
        NodeId::try_from(id).expect("more than 4 billion live buffer nodes")
    }

    /// The live nodes with their ids, for a snapshot.
    pub(crate) fn nodes(&self) -> Vec<(u32, Node)> {
        self.nodes.iter().map(|(i, n)| (i as u32, *n)).collect()
    }

    /// A buffer holding exactly `nodes` under their ids (from
    /// [`nodes`](Self::nodes)); an error if a node's parent is missing.
    pub(crate) fn from_nodes(nodes: Vec<(u32, Node)>) -> Result<Buffer, String> {
        let buffer = Buffer { nodes: nodes.into_iter().map(|(i, n)| (i as usize, n)).collect() };
        for (_, n) in &buffer.nodes {
            if n.parent != NIL && !buffer.nodes.contains(n.parent as usize) {
                return Err(format!("buffer node of row {} lacks its parent", n.row));
            }
        }
        Ok(buffer)
    }

    /// Adds a reference to `id`.
    #[inline]
    pub fn retain(&mut self, id: NodeId) {
        if id != NIL {
            self.nodes[id as usize].refs += 1;
        }
    }

    /// Drops a reference; frees the node and, in turn, its ancestors that
    /// become unreferenced.
    pub fn release(&mut self, mut id: NodeId) {
        while id != NIL {
            let node = &mut self.nodes[id as usize];
            node.refs -= 1;
            if node.refs > 0 {
                return;
            }
            let parent = node.parent;
            self.nodes.remove(id as usize);
            id = parent;
        }
    }

    /// The node.
    #[inline]
    pub fn get(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// Writes the bindings from the first to `id` into `out` (cleared first).
    pub fn path(&self, id: NodeId, out: &mut Vec<Node>) {
        out.clear();
        let mut cur = id;
        while cur != NIL {
            let n = self.nodes[cur as usize];
            out.push(n);
            cur = n.parent;
        }
        out.reverse();
    }

    /// Live nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is live.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Bytes per node.
    pub const NODE_BYTES: usize = std::mem::size_of::<Node>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_chain_frees_iteratively() {
        let mut b = Buffer::default();
        let mut cur = NIL;
        for i in 0..200_000u64 {
            let next = b.push(cur, 0, i, i);
            if cur != NIL {
                b.release(cur);
            }
            cur = next;
        }
        assert_eq!(b.len(), 200_000);
        b.release(cur);
        assert!(b.is_empty());
    }

    #[test]
    fn shared_prefix_survives_one_branch() {
        let mut b = Buffer::default();
        let root = b.push(NIL, 0, 1, 0);
        let l = b.push(root, 1, 2, 1);
        let r = b.push(root, 1, 3, 2);
        b.release(root);
        b.release(l);
        assert_eq!(b.len(), 2);
        assert_eq!(b.get(r).parent, root);
        b.release(r);
        assert!(b.is_empty());
    }
}
