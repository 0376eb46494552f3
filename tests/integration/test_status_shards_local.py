"""Status lists over the status index's partitions on DynamoDB Local, which orders
agents of equal names in a partition its own way (not by key, as moto does): the pages
must still neither lose nor repeat one (tests/unit/test_status_shards.py on moto)."""

from tests.unit.test_status_shards import (
    calls_in_progress_page_in_order,
    filtered_status_lists_page_without_loss,
    status_list_page_costs_one_round,
    status_list_pages_forward_and_back,
)


def test_a_status_list_pages_forward_and_back_over_its_partitions(local_db):
    status_list_pages_forward_and_back(local_db)


def test_a_status_page_reads_each_partition_once(local_db):
    status_list_page_costs_one_round(local_db)


def test_filtered_status_lists_page_without_loss_or_repeat(local_db):
    filtered_status_lists_page_without_loss(local_db)


def test_calls_in_progress_page_through_the_attending_partitions(local_db):
    calls_in_progress_page_in_order(local_db)
