//! Request layouts against an encoder gregor did not write: kafka-python's protocol classes,
//! generated from Kafka's published JSON schemas, encode a request of every version gregor
//! serves of every client API (`tests/clients/schema_requests.py`). Each must decode with
//! gregor's decoder, in the encoding its version uses, and encode back to the same bytes.
//! The controller's inter-broker APIs keep 0.8's layouts and are not compared.

mod common;

#[test]
fn requests_match_the_published_schemas_byte_for_byte() {
    common::schema::check_against_schemas(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/schema_requests.py"
        ),
        common::requests::reencode,
    );
}
