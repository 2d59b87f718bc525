-- Run once by the postgres image on an empty data volume: one database per service.
-- Prefect's migrations enable pg_trgm in theirs (the image's superuser owns both).
CREATE DATABASE prefect;
CREATE DATABASE mlflow;
