use super::*;

#[test]
fn core_tags_decide_the_type() {
    let document = &documents(
        "a: !!int \"3\"\nb: !!str 3\nc: !!float '1.5'\nd: !!bool \"true\"\ne: !!null x\nf: !!int abc\ng: \"3\"\n",
    )[0];
    let root = document.root.as_ref().unwrap();
    assert_eq!(root.get("a").and_then(Node::as_i64), Some(3));
    assert_eq!(root.get("b").and_then(Node::as_str), Some("3"));
    assert!(matches!(root.get("c").map(|node| &node.value), Some(Value::Float(x)) if *x == 1.5));
    assert_eq!(root.get("d").and_then(Node::as_bool), Some(true));
    // A null value reads as absent, as `get` documents.
    assert!(root.get("e").is_none());
    assert_eq!(root.get("f").and_then(Node::as_str), Some("abc"));
    assert_eq!(root.get("g").and_then(Node::as_str), Some("3"));
}

fn documents(text: &str) -> Vec<Document> {
    parse_documents(text)
        .into_iter()
        .map(|parsed| match parsed {
            Parsed::Document(document) => document,
            Parsed::Invalid(error) => panic!("{error}"),
        })
        .collect()
}

fn root(text: &str) -> Node {
    documents(text).remove(0).root.unwrap()
}

fn errors(text: &str) -> Vec<YamlError> {
    parse_documents(text)
        .into_iter()
        .filter_map(|parsed| match parsed {
            Parsed::Invalid(error) => Some(error),
            Parsed::Document(_) => None,
        })
        .collect()
}

#[test]
fn records_positions_and_spans_of_keys_and_values() {
    let text = "a: 1\nb:\n  c: [x, 'y']\n  é: {d: e}\n";
    let node = root(text);
    let b = node.entry("b").unwrap();
    assert_eq!(b.key_position, Position::at(2, 1, 5));
    let c = b.value.entry("c").unwrap();
    assert_eq!(c.key_position, Position::at(3, 3, 10));
    let items = c.value.as_seq().unwrap();
    assert_eq!(items[1].position, Position::at(3, 10, 17));
    assert_eq!(items[1].as_str(), Some("y"));
    assert_eq!(&text[items[1].span()], "'y'");
    assert_eq!(&text[c.value.span()], "[x, 'y']");
    let accented = b.value.entry("é").unwrap();
    assert_eq!(&text[accented.span()], "é: {d: e}");
    assert_eq!(accented.value.position.column, 6);
    assert_eq!(&text[b.value.span()], "c: [x, 'y']\n  é: {d: e}");
    assert_eq!(b.value.style, Style::BlockCollection);
    assert_eq!(accented.value.style, Style::FlowCollection);
}

#[test]
fn resolves_scalars_the_kubernetes_way() {
    let node = root("a: 10\nb: '10'\nc: yes\nd: ~\ne: 0x1F\nf: -3\ng: 1.5\nh: 10s\n");
    assert_eq!(node.get("a").unwrap().as_i64(), Some(10));
    assert_eq!(node.get("b").unwrap().as_str(), Some("10"));
    assert_eq!(node.get("c").unwrap().as_bool(), Some(true));
    assert!(node.get("d").is_none());
    assert_eq!(node.get("e").unwrap().as_i64(), Some(31));
    assert_eq!(node.get("f").unwrap().as_i64(), Some(-3));
    assert_eq!(node.get("g").unwrap().value, Value::Float(1.5));
    assert_eq!(node.get("h").unwrap().as_str(), Some("10s"));
}

#[test]
fn splits_multi_document_streams_and_keeps_empty_documents() {
    let documents = documents("a: 1\n---\n# only a comment\n---\nb: 2\n");
    assert_eq!(documents.len(), 3);
    assert!(documents[1].root.is_none());
    assert_eq!(documents[2].position.line, 4);
}

#[test]
fn keeps_the_last_of_a_repeated_key_and_records_the_first() {
    let text = "a: 1\nb: 2\na: 3\n";
    let document = documents(text).remove(0);
    let node = document.root.unwrap();
    assert_eq!(node.get("a").unwrap().as_i64(), Some(3));
    assert_eq!(node.as_map().unwrap().len(), 2);
    let duplicate = &document.duplicate_keys[0];
    assert_eq!(duplicate.key, "a");
    assert_eq!((duplicate.first.line, duplicate.repeated.line), (1, 3));
    assert_eq!(&text[duplicate.first_span.clone()], "a: 1");
}

#[test]
fn finds_repeated_keys_in_large_mappings() {
    let mut text: String = (0..100).map(|key| format!("k{key}: {key}\n")).collect();
    text.push_str("k7: again\n");
    let document = documents(&text).remove(0);
    assert_eq!(document.duplicate_keys.len(), 1);
    assert_eq!(document.duplicate_keys[0].key, "k7");
    let node = document.root.unwrap();
    assert_eq!(node.as_map().unwrap().len(), 100);
    assert_eq!(node.get("k7").unwrap().as_str(), Some("again"));
}

#[test]
fn reports_a_broken_document_and_reads_the_next() {
    let text = "a: [1, 2\nb: 3\n---\nc: 4\n---\nd: {\n---\ne: 5\n";
    let parsed = parse_documents(text);
    let kinds: Vec<&str> = parsed
        .iter()
        .map(|parsed| match parsed {
            Parsed::Document(_) => "document",
            Parsed::Invalid(_) => "invalid",
        })
        .collect();
    assert_eq!(kinds, ["invalid", "document", "invalid", "document"]);
    let Parsed::Invalid(first) = &parsed[0] else {
        unreachable!()
    };
    assert!(first.line >= 1 && first.line <= 2, "{first:?}");
    let Parsed::Document(last) = &parsed[3] else {
        unreachable!()
    };
    assert_eq!(
        last.root.as_ref().unwrap().get("e").unwrap().as_i64(),
        Some(5)
    );
    assert_eq!(last.root.as_ref().unwrap().position.line, 8);
}

#[test]
fn pieces_parse_to_the_same_positions_as_the_whole() {
    let mut text = String::from("%YAML 1.1\n---\na: 0\n");
    for index in 1..50 {
        text.push_str(&format!("---\n# doc {index}\nkey: {index}\nlist: [x, é]\n"));
    }
    text.push_str("---\nbroken: [\n---\nlast: yes\n");
    let whole = parse_documents(&text);
    for pieces in [1, 2, 3, 7] {
        let mut parsed = Vec::new();
        let parts = split_documents(&text, pieces);
        assert_eq!(parts.len(), pieces, "{pieces}");
        for (origin, range) in parts {
            parse_stream_at(&text[range], origin, |document| parsed.push(document));
        }
        assert_eq!(parsed, whole, "{pieces} pieces");
    }
}

#[test]
fn reports_syntax_errors_with_position() {
    let error = errors("a:\n  b: [1, 2\nc: 3\n").remove(0);
    assert!(error.line >= 2, "{error:?}");
}

#[test]
fn expands_aliases_and_merge_keys() {
    let node = root("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n");
    let merged = node.get("use").unwrap();
    assert_eq!(merged.get("x").unwrap().as_i64(), Some(1));
    assert_eq!(merged.get("y").unwrap().as_i64(), Some(3));
}

#[test]
fn refuses_alias_bombs() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..8 {
        let previous = level - 1;
        text.push_str(&format!(
            "a{level}: &a{level} [*a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}]\n"
        ));
    }
    let error = errors(&text).remove(0);
    assert!(error.message.contains("aliases"), "{error}");
}
