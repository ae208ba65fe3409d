"""The usual way to load GH Archive hours into MongoDB from Python, as the
baseline `just bench-ingest` compares ghbench against: json.loads each line,
insert_many(ordered=False) in batches of 1,000. Usage: URI DB COLLECTION FILE..."""
import gzip
import json
import sys

from pymongo import MongoClient

BATCH = 1000


def main() -> None:
    uri, db, coll, *files = sys.argv[1:]
    collection = MongoClient(uri)[db][coll]
    loaded = 0
    for path in files:
        batch = []
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                batch.append(json.loads(line))
                if len(batch) == BATCH:
                    loaded += len(collection.insert_many(batch, ordered=False).inserted_ids)
                    batch = []
        if batch:
            loaded += len(collection.insert_many(batch, ordered=False).inserted_ids)
    print(loaded)


if __name__ == "__main__":
    main()
