//! The engine against the MongoDB-wire server `just setup` starts: what it
//! reports of a collection (rows counted, sizes on disk, where they came
//! from) and of the server (the read preference the commands follow).

use ghbench_core::TableName;
use ghbench_mongo::backend::MongoBackend;
use ghbench_mongo::setup::PAPER;
use ghbench_mongo::SPEC;
use ghbench_engine::query::Backend;
use ghbench_testkit::mongo_url as url;
use mongodb::bson::{doc, Document};

/// The URI with one more option.
fn with_option(url: &str, option: &str) -> String {
    match url.contains('?') {
        true => format!("{url}&{option}"),
        false => format!("{url}?{option}"),
    }
}

#[tokio::test]
async fn a_collection_s_rows_are_counted_and_its_sizes_are_on_disk_with_their_source() {
    let table: TableName = format!("t_sizes_{}", std::process::id()).parse().unwrap();
    let db = ghbench_mongo::connect::connect(&SPEC, &url()).await.unwrap();
    let coll = db.collection::<Document>(table.as_str());
    coll.drop().await.unwrap();
    let docs: Vec<Document> = (0..300).map(|i| doc! {"_id": format!("h/{i}"), "type": if i % 3 == 0 { "A" } else { "B" }, "text": "x".repeat(200)}).collect();
    coll.insert_many(docs).await.unwrap();

    let backend = MongoBackend::connect(&PAPER, &url(), &table).await.unwrap();
    let storage = backend.sizes().await.unwrap();
    assert_eq!((storage.rows, storage.rows_exact), (300, true));
    assert!(storage.table_bytes > 0 && storage.index_bytes > 0, "{storage:?}");
    let logical = storage.logical_bytes.expect("the uncompressed size beside");
    assert!(logical >= 300 * 200, "{storage:?}");
    let from = storage.sizes_from.clone().unwrap();
    assert!(from.starts_with("rows counted"), "{from}");
    let info = backend.describe().await.unwrap();
    if info.product == "SecantusDB" {
        // It answers $collStats with zero sizes: the command's sizes stand in, said so.
        assert!(from.contains("collStats command (the $collStats stage answered zero sizes"), "{from}");
    }
    assert_eq!(storage.indexes.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["_id_"]);
    backend.close().await;
    coll.drop().await.unwrap();
}

#[tokio::test]
async fn the_record_names_the_read_preference_topology_and_collation_the_queries_had() {
    let table: TableName = "t_unused".parse().unwrap();
    let plain = MongoBackend::connect(&PAPER, &url(), &table).await.unwrap().describe().await.unwrap();
    assert_eq!(plain.settings["read_preference"], "primary (the default)");
    assert!(plain.settings.contains_key("topology"), "{:?}", plain.settings);
    assert!(plain.settings["collation"].contains("binary"), "{:?}", plain.settings);
    let nearest = with_option(&url(), "readPreference=secondaryPreferred");
    let backend = MongoBackend::connect(&PAPER, &nearest, &table).await.unwrap();
    let info = backend.describe().await.unwrap();
    assert!(info.settings["read_preference"].contains("SecondaryPreferred"), "{:?}", info.settings);
    // planCacheClear goes where the queries go and says so, or says why it was not done
    // (SecantusDB has no such command).
    let cleared = backend.clear_caches().await;
    let said = &cleared[0];
    assert!(said.contains("SecondaryPreferred") || said.contains("this server does not support planCacheClear"), "{said}");
    backend.close().await;
}
