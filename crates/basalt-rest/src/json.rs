//! The JSON forms of the models, read straight into compact types.
//!
//! A generic JSON tree (`serde_json::Value`) keeps each object in a map
//! whose smallest node costs hundreds of bytes, so a cell set of small
//! cells would cost over a hundred times its size before it became cells.
//! These types stream from the parser instead: a field the models do not
//! read is skipped without being kept.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A list, or (as HBase's JSON writer puts a list of one) a lone element;
/// `null` is empty.
#[derive(Debug)]
pub(crate) struct OneOrMany<T>(pub Vec<T>);

impl<T> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
            type Value = OneOrMany<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list or a single element")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(OneOrMany(items))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let item = T::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(OneOrMany(vec![item]))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                let item = T::deserialize(de::value::StrDeserializer::<E>::new(text))?;
                Ok(OneOrMany(vec![item]))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(OneOrMany(Vec::new()))
            }
        }

        deserializer.deserialize_any(ListVisitor(PhantomData))
    }
}

/// A string, number or boolean, as the text HBase's models hold (JSON
/// writers send `"3"` or `3` for the same option).
#[derive(Debug)]
pub(crate) struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;

        impl Visitor<'_> for ScalarVisitor {
            type Value = Scalar;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Scalar, E> {
                Ok(Scalar(text.to_string()))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Scalar, E> {
                Ok(Scalar(n.to_string()))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar, E> {
                Ok(Scalar(n.to_string()))
            }

            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Scalar, E> {
                Ok(Scalar(n.to_string()))
            }

            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Scalar, E> {
                Ok(Scalar(b.to_string()))
            }
        }

        deserializer.deserialize_any(ScalarVisitor)
    }
}

/// A cell set: `{"Row":[...]}`.
#[derive(Debug, Deserialize)]
pub(crate) struct CellSetJson {
    #[serde(rename = "Row", default)]
    pub rows: OneOrMany<RowJson>,
}

/// `{"key":"..","Cell":[...]}`.
#[derive(Debug, Deserialize)]
pub(crate) struct RowJson {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(rename = "Cell", default)]
    pub cells: OneOrMany<CellJson>,
}

/// `{"column":"..","timestamp":..,"$":".."}`.
#[derive(Debug, Deserialize)]
pub(crate) struct CellJson {
    #[serde(default)]
    pub column: Option<String>,
    #[serde(default)]
    pub timestamp: Option<Scalar>,
    #[serde(rename = "$", default)]
    pub value: Option<String>,
}

/// An object of scalar fields in order (a family's options).
#[derive(Debug, Default)]
pub(crate) struct Fields(pub Vec<(String, String)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;

        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: Scalar = map.next_value()?;
                    fields.push((key, value.0));
                }
                Ok(Fields(fields))
            }
        }

        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// A schema: scalar table options, and `ColumnSchema`, a list of families.
#[derive(Debug, Default)]
pub(crate) struct SchemaJson {
    pub fields: Vec<(String, String)>,
    pub columns: Vec<Fields>,
}

impl<'de> Deserialize<'de> for SchemaJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SchemaVisitor;

        impl<'de> Visitor<'de> for SchemaVisitor {
            type Value = SchemaJson;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a TableSchema object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SchemaJson, A::Error> {
                let mut schema = SchemaJson::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "ColumnSchema" {
                        let columns: OneOrMany<Fields> = map.next_value()?;
                        schema.columns = columns.0;
                    } else {
                        let value: Scalar = map.next_value()?;
                        schema.fields.push((key, value.0));
                    }
                }
                Ok(schema)
            }
        }

        deserializer.deserialize_map(SchemaVisitor)
    }
}

/// A scanner: scalar fields, `column` (a list of base64 names), `labels`
/// (skipped: Basalt has no visibility labels).
#[derive(Debug, Default)]
pub(crate) struct ScannerJson {
    pub fields: Vec<(String, String)>,
    pub columns: Vec<String>,
}

impl<'de> Deserialize<'de> for ScannerJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScannerVisitor;

        impl<'de> Visitor<'de> for ScannerVisitor {
            type Value = ScannerJson;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Scanner object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ScannerJson, A::Error> {
                let mut scanner = ScannerJson::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "column" => {
                            let columns: OneOrMany<String> = map.next_value()?;
                            scanner.columns = columns.0;
                        }
                        "labels" => {
                            map.next_value::<IgnoredAny>()?;
                        }
                        _ => {
                            let value: Scalar = map.next_value()?;
                            scanner.fields.push((key, value.0));
                        }
                    }
                }
                Ok(scanner)
            }
        }

        deserializer.deserialize_map(ScannerVisitor)
    }
}
